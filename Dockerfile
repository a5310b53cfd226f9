# claim serve: the verification service, its ledger on a volume.
#
#   docker build -t completion-claim .
#   docker run -p 8000:8000 -v claim-data:/var/lib/completion-claim \
#     -v /etc/completion-claim:/etc/completion-claim:ro completion-claim
#
# The service listens on every address of the container, so it needs its token file (claim
# token add NAME --tokens FILE) at /etc/completion-claim/tokens.jsonl, readable by uid 10001;
# arguments after the image's name replace that and --log-format json. A PostgreSQL ledger is
# given by URL in CLAIM_SERVE_LEDGER, with CLAIM_SERVE_KEY, the key every process serving it
# signs with; without them, the ledger and its key live on the volume. The gate (--observe-root,
# --gate-config) runs tests in bubblewrap, which needs user namespaces and a /proc of its own:
# see README.md, "The service in a container".

FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim-bookworm
# git: the gate reads the work trees it judges; bubblewrap: the sandbox its tests run in.
# Unpinned: the base image's Debian release fixes them, and a pin breaks at its next update.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap git \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir "$(ls /wheels/*.whl)[serve]" && rm -rf /wheels
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/completion-claim \
        --create-home --shell /usr/sbin/nologin claim \
    && chmod 0700 /var/lib/completion-claim
ENV XDG_DATA_HOME=/var/lib/completion-claim \
    PYTHONUNBUFFERED=1
USER 10001:10001
VOLUME ["/var/lib/completion-claim"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
ENTRYPOINT ["claim", "serve", "--host", "0.0.0.0", "--port", "8000"]
CMD ["--tokens", "/etc/completion-claim/tokens.jsonl", "--log-format", "json"]
