// render.mjs: Cucumber's HTML report of a Cucumber Messages NDJSON stream, and what
// Cucumber's own query library (the one the report's page uses) reads from it.
//
//   node render.mjs OUT.html < messages.ndjson
//
// writes the report to OUT.html and prints one JSON line per finished test case:
// {"feature", "scenario", "uri", "line", "status", "steps"}, then {"success": …} of the run.
// A line that is not a message, or a message that names what the stream never declared
// (a test case of an unknown pickle, a step of an unknown test case), fails with exit 1.
import { createWriteStream } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import { PassThrough, Writable } from 'node:stream'
import { CucumberHtmlStream } from '@cucumber/html-formatter'
import { NdjsonToMessageStream } from '@cucumber/message-streams'
import { Query } from '@cucumber/query'

const out = process.argv[2]
if (!out) {
  console.error('usage: node render.mjs OUT.html < messages.ndjson')
  process.exit(2)
}

process.stdin.setEncoding('utf8') // the NDJSON parser splits text, not bytes
const query = new Query()
const tee = new PassThrough({ objectMode: true })
const html = pipeline(tee, new CucumberHtmlStream(), createWriteStream(out))
await pipeline(
  process.stdin,
  new NdjsonToMessageStream(),
  new Writable({
    objectMode: true,
    write(envelope, _enc, done) {
      query.update(envelope)
      tee.write(envelope, done)
    },
    final(done) {
      tee.end()
      done()
    },
  }),
)
await html

for (const finished of query.findAllTestCaseFinished()) {
  const pickle = query.findPickleBy(finished)
  if (!pickle) throw new Error(`testCaseFinished ${finished.testCaseStartedId}: no pickle`)
  const lineage = query.findLineageBy(finished)
  if (!lineage?.scenario) throw new Error(`pickle ${pickle.id}: no scenario in its gherkin document`)
  const result = query.findMostSevereTestStepResultBy(finished)
  console.log(JSON.stringify({
    feature: lineage.feature?.name,
    scenario: pickle.name,
    uri: pickle.uri,
    line: query.findLocationOf(pickle)?.line,
    status: result?.status,
    steps: query.findTestStepsFinishedBy(finished).length,
  }))
}
const run = query.findTestRunFinished()
if (!run) throw new Error('no testRunFinished')
console.log(JSON.stringify({ success: run.success }))
