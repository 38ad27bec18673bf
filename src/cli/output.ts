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
