// The web-fetch plugin's anchor: Mozilla Readability (the extraction of
// Firefox's Reader View) on linkedom's DOM, its article HTML converted to
// Markdown by turndown with the GFM plugin (tables). Run by
// plugins/web-fetch/fetch's TestEvalSet over the evaluation set. Reads
// JSON lines {"id", "url", "html"} on stdin and writes one line per page:
// {"id", "title", "markdown"}, or {"id", "error"} when Readability finds
// no article or throws.
import { Readability } from '@mozilla/readability'
import { parseHTML } from 'linkedom'
import TurndownService from 'turndown'
import { gfm } from 'turndown-plugin-gfm'
import { createInterface } from 'node:readline'

const td = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' })
td.use(gfm)

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
for await (const line of lines) {
  if (!line.trim()) continue
  const { id, url, html } = JSON.parse(line)
  let row
  try {
    const { document } = parseHTML(html)
    // Readability resolves relative links against the document's URL.
    const base = document.createElement('base')
    base.setAttribute('href', url)
    document.head?.prepend(base)
    const article = new Readability(document).parse()
    row = article ? { id, title: article.title, markdown: td.turndown(article.content || '') } : { id, error: 'no article found' }
  } catch (e) {
    row = { id, error: String(e && e.message ? e.message : e) }
  }
  process.stdout.write(JSON.stringify(row) + '\n')
}
