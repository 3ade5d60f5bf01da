// The moderation plugin's anchors over the same inputs as the local
// engine (plugins/moderation/moderate, TestAnchorSideBySide):
// @presidio-dev/hai-guardrails and, for prompt injection only,
// @andersmyrmel/vard. Reads JSON lines {"id", "text"} on stdin and writes
// one line per input: {"id", "injection", "pii", "secret", "vard"}, each
// true when that guard flagged the text (injection: hai-guardrails'
// injection guard or its leakage guard, both in pattern mode; vard: its
// moderate preset), with "redacted": the text as hai-guardrails' PII and
// secret guards rewrote it.
//
// Heuristic mode is not run: in 1.12.0 as published its worker pool is
// loaded from the package's CI build directory
// (/home/runner/work/hai-guardrails/…/piscina/dist/worker.js) and throws
// on every machine but that one. Its language-model mode needs an LLM.
import { injectionGuard, leakageGuard, piiGuard, secretGuard, SelectionType } from '@presidio-dev/hai-guardrails'
import vard from '@andersmyrmel/vard'
import { createInterface } from 'node:readline'

// Importing the library starts those worker pools (two Heuristic tactics
// built at module load, two threads each), and each failing thread emits
// 'error' on a pool nobody can reach, which Node turns into an uncaught
// exception: whether it lands before the last input is answered is a race
// (it lost on a slow CI machine). Only that known failure is ignored; any
// other uncaught error still ends the run with a non-zero exit.
const brokenWorker = '/home/runner/work/hai-guardrails/'
process.on('uncaughtException', (err) => {
  if (err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes(brokenWorker)) return
  console.error(err)
  process.exit(1)
})

const injection = injectionGuard({ roles: ['user'] }, { mode: 'pattern', threshold: 0.7 })
const leakage = leakageGuard({ roles: ['user'] }, { mode: 'pattern', threshold: 0.7 })
const pii = piiGuard({ selection: SelectionType.All })
const secret = secretGuard({ selection: SelectionType.All })
const vardModerate = vard.moderate()

// A guard's verdict on one user message: flagged, and the text it left.
async function run(guard, text) {
  const [r] = await guard([{ role: 'user', content: text }])
  const out = r.modifiedMessage ? r.modifiedMessage.content : text
  // The secret guard reports passed: true with a rewritten message, the
  // PII guard passed: false; a rewrite or a failure is a finding.
  return { flagged: !r.passed || out !== text, out }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
for await (const line of lines) {
  if (!line.trim()) continue
  const { id, text } = JSON.parse(line)
  const inj = await run(injection, text)
  const leak = await run(leakage, text)
  const p = await run(pii, text)
  const s = await run(secret, p.out)
  process.stdout.write(JSON.stringify({ id, injection: inj.flagged || leak.flagged, pii: p.flagged, secret: s.flagged, vard: !vardModerate.safeParse(text).safe, redacted: s.out }) + '\n')
}
// The library starts worker threads it never uses (see above): leave
// without waiting for them.
process.exit(0)
