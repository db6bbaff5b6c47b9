// The metrics of one app instance, in the Prometheus text format (`GET /metrics`, docs/operations.md). Every
// part counts through the small `Meter` interface below and never imports prom-client: the platform hands
// each module its meter, and a module declares its own metrics when it is created. Each instance has a
// registry of its own (tests start many apps in one process; a process-wide default registry would see the
// same name declared twice). Two kinds of metric:
//   counted  counters and histograms moved where the thing happens (a request answered, a delivery attempted)
//   read     gauges read at scrape time from where the truth already is (the jobs table, the pool), through
//            `readings`: one read per scrape feeds several gauges, and a read that fails leaves its gauges
//            out of that scrape (and counts the failure) instead of failing the whole scrape.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

const NAN_AS_PROM_CLIENT_WRITES_IT = / Nan\n/g;

/** Label values by label name; a label left out is the empty value. */
export type Labels<Name extends string> = Partial<Record<Name, string>>;

export interface CounterMetric<Name extends string = never> {
  inc(labels?: Labels<Name>, by?: number): void;
}

export interface HistogramMetric<Name extends string = never> {
  observe(labels: Labels<Name>, seconds: number): void;
}

export interface MetricSpec<Name extends string> {
  /** Starts with `comms_`; counters end `_total`, durations `_seconds` (Prometheus naming). */
  name: string;
  help: string;
  labels?: readonly Name[];
}

export interface Sample {
  labels?: Record<string, string>;
  value: number;
}

/** Gauges whose values one read finds at scrape time: each gauge's samples by its name. */
export interface Readings {
  gauges: MetricSpec<string>[];
  read(): Promise<Record<string, Sample[]>>;
}

export interface Meter {
  counter<Name extends string = never>(spec: MetricSpec<Name>): CounterMetric<Name>;
  histogram<Name extends string = never>(
    spec: MetricSpec<Name> & { buckets?: number[] },
  ): HistogramMetric<Name>;
  readings(readings: Readings): void;
}

/** Latency buckets (seconds) for what answers in milliseconds to seconds: requests, deliveries, turns. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class Metrics implements Meter {
  private readonly registry = new Registry();
  /** The reads of the scrape under way, so that every gauge of one read shares it. */
  private scrape = new Map<Readings, Promise<Record<string, Sample[]> | undefined>>();
  private readonly readFailures: Counter<'metric'>;

  private readonly onReadError: (error: unknown, gauges: string[]) => void;

  constructor(options: { onReadError?: (error: unknown, gauges: string[]) => void } = {}) {
    this.onReadError = options.onReadError ?? (() => {});
    this.readFailures = new Counter({
      name: 'comms_metrics_read_failures_total',
      help: 'Scrape-time reads that failed (their gauges were left out of that scrape), by first gauge',
      labelNames: ['metric'],
      registers: [this.registry],
    });
  }

  /** Node's own process metrics (CPU, memory, event loop lag, GC), prefixed `comms_`. */
  collectProcessMetrics(): void {
    collectDefaultMetrics({ register: this.registry, prefix: 'comms_' });
  }

  counter<Name extends string = never>(spec: MetricSpec<Name>): CounterMetric<Name> {
    const counter = new Counter<string>({
      name: spec.name,
      help: spec.help,
      labelNames: [...(spec.labels ?? [])],
      registers: [this.registry],
    });
    return {
      inc: (labels = {}, by = 1) => counter.inc(labels as Record<string, string>, by),
    };
  }

  histogram<Name extends string = never>(
    spec: MetricSpec<Name> & { buckets?: number[] },
  ): HistogramMetric<Name> {
    const histogram = new Histogram<string>({
      name: spec.name,
      help: spec.help,
      labelNames: [...(spec.labels ?? [])],
      buckets: spec.buckets ?? LATENCY_BUCKETS,
      registers: [this.registry],
    });
    return { observe: (labels, seconds) => histogram.observe(labels as Record<string, string>, seconds) };
  }

  readings(readings: Readings): void {
    const names = readings.gauges.map((gauge) => gauge.name);
    for (const spec of readings.gauges) {
      const metrics = this;
      new Gauge({
        name: spec.name,
        help: spec.help,
        labelNames: [...(spec.labels ?? [])],
        registers: [this.registry],
        async collect() {
          this.reset();
          const values = await metrics.read(readings, names);
          for (const sample of values?.[spec.name] ?? []) this.set(sample.labels ?? {}, sample.value);
        },
      });
    }
  }

  /** The whole registry in the Prometheus text exposition format. prom-client writes a NaN as `Nan`; the
   * format (and strict parsers) want `NaN`, which the event-loop lag gauges are until their first sample. */
  async render(): Promise<{ contentType: string; body: string }> {
    this.scrape = new Map();
    try {
      const body = await this.registry.metrics();
      return {
        contentType: this.registry.contentType,
        body: body.replace(NAN_AS_PROM_CLIENT_WRITES_IT, ' NaN\n'),
      };
    } finally {
      this.scrape = new Map();
    }
  }

  private read(readings: Readings, names: string[]): Promise<Record<string, Sample[]> | undefined> {
    let reading = this.scrape.get(readings);
    if (!reading) {
      reading = readings.read().catch((error: unknown) => {
        this.readFailures.inc({ metric: names[0] });
        this.onReadError(error, names);
        return undefined;
      });
      this.scrape.set(readings, reading);
    }
    return reading;
  }
}
