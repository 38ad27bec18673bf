/** Prints a reply as JSON (--json) or as the human lines the command chose. */
export function printResult(
  reply: Record<string, unknown>,
  asJson: boolean | undefined,
  human: (reply: Record<string, unknown>) => string[],
): void {
  if (asJson) {
    process.stdout.write(`${JSON.stringify(reply, null, 2)}\n`);
    return;
  }
  const lines = human(reply);
  process.stdout.write(lines.length > 0 ? `${lines.join('\n')}\n` : '(none)\n');
}

/** Rows under a header, each column as wide as its widest cell, two spaces apart; no trailing blanks. */
export function formatTable(header: string[], rows: string[][]): string[] {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  return [header, ...rows].map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}
