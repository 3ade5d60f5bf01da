// The response-healing plugin's anchor: npm jsonrepair over the same
// inputs (plugins/response-healing/heal, TestEvalSet and
// TestAtLeastJSONRepair). Reads JSON lines {"id", "content"} on stdin and
// writes one line per input: {"id", "output"} with jsonrepair's result, or
// {"id", "error"} when it throws.
import { jsonrepair } from 'jsonrepair'
import { createInterface } from 'node:readline'

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
for await (const line of lines) {
  if (!line.trim()) continue
  const { id, content } = JSON.parse(line)
  let row
  try {
    row = { id, output: jsonrepair(content) }
  } catch (e) {
    row = { id, error: String(e && e.message ? e.message : e) }
  }
  process.stdout.write(JSON.stringify(row) + '\n')
}
