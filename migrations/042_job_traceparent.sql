-- The W3C traceparent of the context that enqueued a job, when the server traces (OTEL_EXPORTER_OTLP_ENDPOINT):
-- the job's run is a span of that trace, so a request's trace follows it into its background work
-- (docs/operations.md "Traces"). NULL when nothing was being traced.
ALTER TABLE jobs ADD COLUMN traceparent text;
