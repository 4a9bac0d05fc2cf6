# The image of the web and worker services of docker-compose.yml (docs/team-deployment.md).
FROM python:3.11-slim
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# The commit the image is built from, recorded in every result's provenance (.git is not copied in):
# docker build --build-arg PSB_COMMIT=<commit> . (unset: results record no commit)
ARG PSB_COMMIT=""
ENV PSB_COMMIT=${PSB_COMMIT}
# A user of its own: the processes never run as root. instance/ stays empty (everything shared is in the
# database, Redis or the object store) but Flask creates it at start.
RUN useradd --system --uid 10001 --no-create-home --home-dir /app psb && mkdir -p instance && chown psb instance
USER 10001
EXPOSE 8000
