"""The shipped Q4_1 weights are copied once as Q8_0 (which llama.cpp batches on a CPU); a copy that cannot be
written leaves the original in use, said in one sentence."""
import llama_cpp.llama_cpp as low

from r2mad.backends.embedded import smollm2_path
from r2mad.backends.requantize import batched_weights, file_type


def test_the_shipped_weights_get_one_q8_copy(tmp_path):
    shipped = smollm2_path()
    assert file_type(shipped) == low.LLAMA_FTYPE_MOSTLY_Q4_1
    copy = batched_weights(shipped, tmp_path)
    assert copy.parent == tmp_path and file_type(copy) == low.LLAMA_FTYPE_MOSTLY_Q8_0
    made = copy.stat().st_mtime_ns
    assert batched_weights(shipped, tmp_path) == copy and copy.stat().st_mtime_ns == made  # made once
    assert batched_weights(copy, tmp_path / "other") == copy  # Q8_0 already: used as it is
    assert [p.name for p in tmp_path.iterdir()] == [copy.name]  # no partial file left


def test_a_folder_that_cannot_be_written_keeps_the_original(tmp_path, capsys):
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the folder should be")
    shipped = smollm2_path()
    assert batched_weights(shipped, blocked) == shipped
    err = capsys.readouterr().err
    assert f"Using {shipped.name} as it is: its Q8_0 copy could not be written to {blocked}" in err
