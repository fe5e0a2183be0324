import type { FastifyRequest } from 'fastify';
import { AppError } from '../src/errors/catalog';
import { refuseContentCoding } from '../src/json-body';

/**
 * What a failure while reading an upload form is to the client, the same for
 * every upload route: a second file is 422 at body.file, a file or form past
 * its limits is `tooLarge` (413), anything else unreadable 400.
 */
export function uploadFailure(error: unknown, tooLarge: AppError): AppError {
  if (error instanceof AppError) return error;
  const code = (error as { code?: string }).code;
  if (code === 'FST_FILES_LIMIT') return AppError.validation([{ loc: ['body', 'file'], msg: 'send one file', type: 'value_error' }]);
  if (code === 'FST_REQ_FILE_TOO_LARGE' || code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') return tooLarge;
  return new AppError('bad_request', 'The multipart body could not be read', { cause: error });
}

/**
 * How a form's text fields are read off the wire: as bytes (Latin-1 maps
 * each byte to one character), so `fieldText` can decode them strictly.
 * busboy's default decodes UTF-8 loosely, turning bytes that are not UTF-8
 * into U+FFFD: a prompt the client never wrote would be sent and charged.
 * A part that names its own charset is decoded in it by busboy.
 */
export const TEXT_FIELDS_AS_BYTES = { defCharset: 'latin1' } as const;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A text field read with TEXT_FIELDS_AS_BYTES, as UTF-8; bytes that are not UTF-8 are 422 at the field, as they are 400 in a JSON body. */
export function fieldText(name: string, value: unknown): string {
  try {
    return utf8.decode(Buffer.from(String(value), 'latin1'));
  } catch {
    throw AppError.validation([{ loc: ['body', name], msg: 'is not valid UTF-8 text', type: 'value_error' }]);
  }
}

/** 415 unless the request is a multipart form sent as it is (no content coding): `what` says what to send instead. */
export function requireMultipart(request: FastifyRequest, what: string): void {
  refuseContentCoding(request.headers);
  if (!request.isMultipart()) throw new AppError('unsupported_media_type', what);
}
