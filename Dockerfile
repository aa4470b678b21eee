# Hermes as a container: `hermes serve` on port 11434, state in the volume /data.
#
# In the wild (the default base, packages from PyPI):
#   docker build -t hermes .
# With no container registry and no package index inside the build (scripts/docker-smoke.sh):
#   docker build --network host --build-arg BASE=<imported Debian rootfs with python3-venv> \
#                --build-arg WHEELHOUSE=wheelhouse -t hermes <context holding wheelhouse/>
ARG BASE=python:3.11-slim

# ---- build: the project and its dependencies in a venv under /opt/hermes -----------------
FROM ${BASE} AS build
LABEL org.opencontainers.image.title="hermes-agent-server"
# A directory of wheels in the build context: every dependency, plus hatchling to build the
# project. When set, pip installs from it alone and never asks a package index.
ARG WHEELHOUSE=
# Optional extras, comma-separated, e.g. `postgres` (see pyproject.toml).
ARG EXTRAS=
# Dependencies first, in their own layer: a code change does not reinstall them.
COPY pyproject.toml /src/
COPY ${WHEELHOUSE:-pyproject.toml} /wheels/
RUN set -eu; \
    python3 -m venv /opt/hermes; \
    python3 -c "import sys, tomllib; p = tomllib.load(open('/src/pyproject.toml', 'rb'))['project']; \
extras = [e for e in sys.argv[1].split(',') if e]; \
print('\n'.join(p['dependencies'] + [d for e in extras for d in p['optional-dependencies'][e]]))" \
        "$EXTRAS" > /requirements.txt; \
    /opt/hermes/bin/pip install --no-cache-dir --disable-pip-version-check \
        ${WHEELHOUSE:+--no-index --find-links /wheels} -r /requirements.txt
COPY . /src
RUN set -eu; \
    /opt/hermes/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps \
        ${WHEELHOUSE:+--no-index --find-links /wheels} /src; \
    /opt/hermes/bin/pip uninstall --yes --quiet pip setuptools 2>/dev/null || true; \
    /opt/hermes/bin/hermes --version

# ---- runtime: the venv, an unprivileged user, nothing else --------------------------------
FROM ${BASE}
LABEL org.opencontainers.image.title="hermes-agent-server" \
      org.opencontainers.image.description="Hermes: a self-hosted AI agent that remembers"
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/hermes hermes \
    && mkdir -p /data && chown hermes:hermes /data && chmod 0700 /data
COPY --from=build /opt/hermes /opt/hermes
# Inside the container Hermes must listen on all interfaces for a published port to reach it.
# HERMES_ALLOW_UNAUTHENTICATED_PUBLIC_BIND=1 accepts running that without a server key, so
# the tutorial works unchanged; it is safe only when the port is published on the host's
# loopback (`-p 127.0.0.1:11434:11434`). Publishing it further? Set HERMES_API_KEY
# (>= 16 characters): with a key the flag changes nothing. The server prints a warning at
# every start while it runs open.
ENV PATH=/opt/hermes/bin:$PATH \
    HERMES_HOME=/data \
    HERMES_HOST=0.0.0.0 \
    HERMES_PORT=11434 \
    HERMES_ALLOW_UNAUTHENTICATED_PUBLIC_BIND=1 \
    PYTHONUNBUFFERED=1
VOLUME ["/data"]
WORKDIR /data
USER hermes
EXPOSE 11434
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('HERMES_PORT', '11434'), timeout=4)"]
ENTRYPOINT ["hermes"]
CMD ["serve"]
