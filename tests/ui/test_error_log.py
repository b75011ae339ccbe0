"""The server log of a running app: a visitor's expected mistake (a gr.Error we raise) is one line, with no
traceback; a bug still prints its full traceback, so the owner can find it."""
import logging

import pytest

pytest.importorskip("gradio_client")

from r2mad.settings.config import load_config  # noqa: E402
from r2mad.ui import build_app  # noqa: E402
from r2mad.ui.serving import launch  # noqa: E402
from tests.helpers import free_port  # noqa: E402
from tests.ui_client import PatientClient as Client  # noqa: E402

pytestmark = pytest.mark.slow  # a real app


@pytest.fixture
def app(config_dir):
    demo = build_app(load_config(config_dir))
    demo.queue(default_concurrency_limit=2)
    port = free_port()
    launch(demo, prevent_thread_lock=True, server_port=port, quiet=True)
    yield demo, f"http://127.0.0.1:{port}/"
    demo.close()


def test_a_visitors_mistake_is_one_log_line_and_a_bug_keeps_its_traceback(app, capfd, caplog, monkeypatch):
    demo, url = app
    client = Client(url, verbose=False)
    capfd.readouterr()
    with caplog.at_level(logging.WARNING, logger="r2mad.ui"):
        with pytest.raises(Exception, match="No saved run of yours has that id"):
            client.predict(run_id="no-such-run", api_name="/get_run")
    err = capfd.readouterr().err
    assert "Traceback" not in err, err
    refusals = [r.getMessage() for r in caplog.records if "No saved run of yours" in r.getMessage()]
    assert len(refusals) == 1 and "\n" not in refusals[0] and not caplog.records[-1].exc_info

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in list_runs")

    monkeypatch.setattr(demo.r2mad_services.store, "list_runs", broken)
    with pytest.raises(Exception):
        client.predict(api_name="/list_runs")
    err = capfd.readouterr().err
    assert "Traceback" in err and "RuntimeError: a bug in list_runs" in err, err
