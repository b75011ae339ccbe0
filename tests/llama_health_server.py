"""llama-cpp-python's OpenAI-compatible server with a /health route added, as vLLM's and llama.cpp's own
server have one: vllm-router waits for GET /health before it routes to a worker. Run as a script:
`python tests/llama_health_server.py MODEL PORT` (a test fixture starts it; not a test module)."""
import sys

import uvicorn
from llama_cpp.server.app import create_app
from llama_cpp.server.settings import ModelSettings, ServerSettings

if __name__ == "__main__":
    model, port = sys.argv[1], int(sys.argv[2])
    app = create_app(server_settings=ServerSettings(host="127.0.0.1", port=port),
                     model_settings=[ModelSettings(model=model, n_ctx=2048, verbose=False)])
    app.add_api_route("/health", lambda: {"status": "ok"}, methods=["GET"])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
