import { parentPort, workerData } from 'node:worker_threads';
import { htmlText, PageTextRefused } from './page-text';

/** One page's text, in a thread of its own (see page-text.ts); answers { page } or { refused } or { failed }. */
try {
  parentPort!.postMessage({ page: htmlText((workerData as { html: string }).html) });
} catch (error) {
  if (error instanceof PageTextRefused) parentPort!.postMessage({ refused: error.message });
  else parentPort!.postMessage({ failed: error instanceof Error ? error.message : 'the page could not be read' });
}
