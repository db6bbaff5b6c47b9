// A column chart of hourly counts (GET /messages/stats/hourly, GET /calls/stats/hourly): one column an hour,
// its series stacked, drawn as SVG, which is enough for a few hundred columns and weighs nothing, where a chart
// library would be most of the dashboard's JavaScript. A screen reader hears the summary (the total, the
// busiest hour) and may open the same figures as a table; the SVG itself is one labelled image.
import { useId } from 'react';

export interface Series<Bucket> {
  key: keyof Bucket & string;
  label: string;
  /** The CSS class that colours it (console.css, .series-*). */
  className: string;
}

const WIDTH = 600;
const HEIGHT = 140;
const AXIS = 16;

/** "14:00", or "Tue 14:00" over a week. */
function hourLabel(start: string, withDay: boolean): string {
  return new Date(start).toLocaleString(undefined, {
    ...(withDay && { weekday: 'short' }),
    hour: '2-digit',
    minute: '2-digit',
  });
}

export function HourlyChart<Bucket extends { start: string }>({
  title,
  buckets,
  series,
}: {
  title: string;
  buckets: Bucket[] | undefined;
  series: Series<Bucket>[];
}) {
  const id = useId();
  if (!buckets) return <p aria-busy="true">Loading {title.toLowerCase()}…</p>;
  const value = (bucket: Bucket, key: keyof Bucket) => Number(bucket[key]) || 0;
  const totals = buckets.map((bucket) => series.reduce((sum, each) => sum + value(bucket, each.key), 0));
  const max = Math.max(1, ...totals);
  const sum = totals.reduce((a, b) => a + b, 0);
  const busiest = totals.indexOf(Math.max(...totals));
  const withDay = buckets.length > 24;
  const column = WIDTH / buckets.length;
  const bySeries = series.map(
    (each) => `${buckets.reduce((n, b) => n + value(b, each.key), 0)} ${each.label}`,
  );
  const summary =
    sum === 0
      ? `None in these ${buckets.length} hours.`
      : `${sum} in ${buckets.length} hours (${bySeries.join(', ')}); the busiest hour was ${hourLabel(
          buckets[busiest]!.start,
          withDay,
        )} with ${totals[busiest]}.`;
  return (
    <figure className="hourly-chart">
      <figcaption>
        <strong id={`${id}-title`}>{title}</strong>{' '}
        <span id={`${id}-summary`} data-testid="chart-summary">
          {summary}
        </span>
      </figcaption>
      <svg
        className="chart"
        viewBox={`0 0 ${WIDTH} ${HEIGHT + AXIS}`}
        role="img"
        aria-labelledby={`${id}-title ${id}-summary`}
        preserveAspectRatio="none"
      >
        <title>{title}</title>
        <line x1="0" x2={WIDTH} y1={HEIGHT} y2={HEIGHT} className="axis" />
        {buckets.map((bucket, index) => {
          let top = HEIGHT;
          return (
            <g key={bucket.start}>
              {series.map((each) => {
                const height = (value(bucket, each.key) / max) * (HEIGHT - 4);
                top -= height;
                return height > 0 ? (
                  <rect
                    key={each.key}
                    className={each.className}
                    x={index * column + column * 0.1}
                    y={top}
                    width={column * 0.8}
                    height={height}
                  />
                ) : null;
              })}
            </g>
          );
        })}
        <text x="0" y={HEIGHT + AXIS - 3}>
          {hourLabel(buckets[0]!.start, withDay)}
        </text>
        <text x={WIDTH} y={HEIGHT + AXIS - 3} textAnchor="end">
          {hourLabel(buckets[buckets.length - 1]!.start, withDay)}
        </text>
      </svg>
      <ul className="legend" aria-hidden="true">
        {series.map((each) => (
          <li key={each.key}>
            <span className={`swatch ${each.className}`} /> {each.label}
          </li>
        ))}
      </ul>
      <details>
        <summary>{title} as a table</summary>
        <div className="overflow-auto">
          <table className="striped">
            <thead>
              <tr>
                <th scope="col">Hour</th>
                {series.map((each) => (
                  <th key={each.key} scope="col">
                    {each.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {buckets.map((bucket) => (
                <tr key={bucket.start}>
                  <th scope="row">{hourLabel(bucket.start, withDay)}</th>
                  {series.map((each) => (
                    <td key={each.key}>{value(bucket, each.key)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
