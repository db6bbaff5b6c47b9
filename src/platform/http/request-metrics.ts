// Every answered request counted by its route pattern (`/api/v2/messages/:id`, never the raw URL, so the
// series stay bounded whatever clients send), method and status, with its latency (docs/operations.md).
// A request no route matched counts under the route `unmatched`.
import type { FastifyInstance } from 'fastify';
import type { Meter } from '../metrics/index.ts';

export function countRequests(app: FastifyInstance, meter: Meter): void {
  const requests = meter.counter({
    name: 'comms_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code',
    labels: ['method', 'route', 'status'],
  });
  const duration = meter.histogram({
    name: 'comms_http_request_duration_seconds',
    help: 'Time from a request arriving to its answer being sent, by method, route pattern and status class',
    labels: ['method', 'route', 'status_class'],
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const method = request.method;
    const status = reply.statusCode;
    requests.inc({ method, route, status: String(status) });
    duration.observe(
      { method, route, status_class: `${Math.floor(status / 100)}xx` },
      reply.elapsedTime / 1000,
    );
  });
}
