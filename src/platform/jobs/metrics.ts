// The job queue's metrics (docs/operations.md): counters moved as jobs end, gauges read at scrape time.
import type { CounterMetric, HistogramMetric, Meter } from '../metrics/index.ts';
import type { OpenJobs } from './store.ts';

export interface JobMetrics {
  completed: CounterMetric<'queue'>;
  failures: CounterMetric<'queue'>;
  dead: CounterMetric<'queue'>;
  duration: HistogramMetric<'queue'>;
}

/** Counters moved as jobs end, and the open jobs read from the table at scrape time. */
export function declareJobMetrics(
  meter: Meter,
  source: { openJobs: () => Promise<OpenJobs[]>; queues: () => string[] },
): JobMetrics {
  const labels = ['queue'] as const;
  meter.readings({
    gauges: [
      { name: 'comms_jobs_waiting', help: 'Jobs due and waiting for a worker', labels },
      {
        name: 'comms_jobs_scheduled',
        help: 'Jobs pending for a later time (retries, paced sends)',
        labels,
      },
      { name: 'comms_jobs_running', help: 'Jobs claimed by a worker and under way', labels },
      {
        name: 'comms_jobs_oldest_waiting_seconds',
        help: 'How long the oldest due job has waited for a worker (0: none waiting)',
        labels,
      },
    ],
    read: async () => {
      const open = new Map((await source.openJobs()).map((row) => [row.queue, row]));
      // Every queue this process knows, at 0 when it has nothing open, so an alert sees the series.
      const queues = [...new Set([...source.queues(), ...open.keys()])];
      const sample = (value: (row: OpenJobs | undefined) => number) =>
        queues.map((queue) => ({ labels: { queue }, value: value(open.get(queue)) }));
      return {
        comms_jobs_waiting: sample((row) => row?.waiting ?? 0),
        comms_jobs_scheduled: sample((row) => row?.scheduled ?? 0),
        comms_jobs_running: sample((row) => row?.running ?? 0),
        comms_jobs_oldest_waiting_seconds: sample((row) => row?.oldest_seconds ?? 0),
      };
    },
  });
  return {
    completed: meter.counter({ name: 'comms_jobs_completed_total', help: 'Jobs run to success', labels }),
    failures: meter.counter({
      name: 'comms_jobs_failures_total',
      help: 'Job runs that failed (each is retried until its attempts run out)',
      labels,
    }),
    dead: meter.counter({
      name: 'comms_jobs_dead_total',
      help: 'Jobs that failed their last attempt and will not run again',
      labels,
    }),
    duration: meter.histogram({
      name: 'comms_job_duration_seconds',
      help: 'How long a job run took, whatever its outcome',
      labels,
    }),
  };
}
