/** Most events inside any half-open window of `windowMs` (times in ms). */
export function maxInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end++) {
    while ((sorted[end] ?? 0) - (sorted[start] ?? 0) >= windowMs) start++;
    best = Math.max(best, end - start + 1);
  }
  return best;
}

/** Most intervals [start, end) that hold one moment in common (times in ms); an end frees its place before a start at the same ms. */
export function maxOverlap(intervals: Array<{ start: number; end: number }>): number {
  const events = intervals
    .flatMap(({ start, end }) => [
      { at: start, step: 1 },
      { at: end, step: -1 },
    ])
    .sort((a, b) => a.at - b.at || a.step - b.step);
  let open = 0;
  let best = 0;
  for (const event of events) {
    open += event.step;
    best = Math.max(best, open);
  }
  return best;
}
