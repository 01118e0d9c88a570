# The training worker image: Celery + torch + TRL + PEFT, no Django, no database access.
# TORCH_INDEX selects the wheel: the CPU build (default) or a CUDA build for GPU pools, e.g.
#   docker build -f docker/worker.Dockerfile --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 .
FROM python:3.11.10-slim-bookworm

ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    PYTHONPATH=/app HF_HUB_OFFLINE=1 \
    POSTTRAIN_VAR_DIR=/var/lib/posttrain POSTTRAIN_WORK_DIR=/var/lib/posttrain/work
WORKDIR /app
# bubblewrap: the sandbox python graders run in (no network, own namespaces).
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*
COPY requirements-common.txt requirements-worker.txt constraints.txt ./
COPY sdk ./sdk
RUN pip install torch==2.13.0 --index-url "$TORCH_INDEX" \
    && pip install -r requirements-worker.txt ./sdk -c constraints.txt
COPY workers ./workers
RUN useradd --uid 10001 --create-home posttrain \
    && mkdir -p /var/lib/posttrain/work && chown -R posttrain /var/lib/posttrain
USER posttrain
# POSTTRAIN_POOL picks the queue (train.<pool>). One job per worker process.
CMD ["sh", "-c", "exec celery -A workers.celery_app worker -Q train.${POSTTRAIN_POOL:-cpu} \
     --concurrency 1 --prefetch-multiplier 1 -n train-${POSTTRAIN_POOL:-cpu}@%h --loglevel INFO"]
