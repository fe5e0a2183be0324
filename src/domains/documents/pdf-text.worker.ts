import { parentPort, workerData } from 'node:worker_threads';
import { pdfText, type PdfTextInput } from './pdf-text';

/** One PDF's text, in a thread of its own (see extract.ts); answers one PdfTextMessage. */
pdfText(workerData as PdfTextInput).then(
  (message) => parentPort!.postMessage(message),
  (error: unknown) => parentPort!.postMessage({ unreadable: error instanceof Error ? error.message : String(error) }),
);
