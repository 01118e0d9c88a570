# The platform image: web server (gunicorn), platform worker, beat, migrations. No torch.
FROM python:3.11.10-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    PYTHONPATH=/app/platform:/app \
    DJANGO_SETTINGS_MODULE=posttrain_server.settings \
    POSTTRAIN_VAR_DIR=/var/lib/posttrain \
    PROMETHEUS_MULTIPROC_DIR=/tmp/prometheus
WORKDIR /app
# bubblewrap: POST /v1/fine_tuning/alpha/graders/run runs python graders in the sandbox too.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*
COPY requirements-common.txt requirements-web.txt constraints.txt ./
COPY sdk ./sdk
RUN pip install -r requirements-web.txt ./sdk -c constraints.txt
COPY manage.py ./
COPY platform ./platform
COPY workers ./workers
RUN useradd --uid 10001 --create-home posttrain \
    && mkdir -p /var/lib/posttrain /tmp/prometheus \
    && chown posttrain /var/lib/posttrain /tmp/prometheus
USER posttrain
EXPOSE 8000
CMD ["gunicorn", "posttrain_server.wsgi:application", "--bind", "0.0.0.0:8000", \
     "--workers", "4", "--threads", "4", "--timeout", "120", "--access-logfile", "-"]
