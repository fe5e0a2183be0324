import { AppError } from '../src/errors/catalog';

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
