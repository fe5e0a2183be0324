/** How the operator sets where a process listens: the names to print in a refusal. */
export interface ListenSettings {
  /** e.g. `HOST`, or `--host` when the command line gave it. */
  host: string;
  /** e.g. `PORT`, or `--port`. */
  port: string;
}

/** The settings the server reads (src/kernel/config.ts). */
export const SERVER_LISTEN_SETTINGS: ListenSettings = { host: 'HOST', port: 'PORT' };

interface SystemError {
  code?: unknown;
  syscall?: unknown;
  address?: unknown;
  port?: unknown;
  hostname?: unknown;
}

/**
 * One line for an operator who cannot listen where the settings say, naming
 * the setting to change; undefined for any other error (which keeps its
 * stack). Covers a busy port, a privileged one, an address this machine does
 * not have and a host name that does not resolve.
 */
export function describeListenError(error: unknown, at: { host: string; port: number }, settings: ListenSettings): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, syscall, address, port, hostname } = error as SystemError;
  const where = `port ${typeof port === 'number' ? port : at.port} on ${typeof address === 'string' ? address : at.host}`;
  switch (code) {
    case 'EADDRINUSE':
      return `${where} is already in use; set ${settings.port} (or ${settings.host}) to another value`;
    case 'EACCES':
      if (syscall !== 'listen' && syscall !== 'bind') return undefined;
      return `${where} needs privileges this process does not have (ports below 1024 do); set ${settings.port} to 1024 or above, or let a proxy or CAP_NET_BIND_SERVICE bind it`;
    case 'EADDRNOTAVAIL':
      return `${typeof address === 'string' ? address : at.host} is not an address of this machine; set ${settings.host} to one that is (127.0.0.1, or 0.0.0.0 for every interface)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      if (syscall !== 'getaddrinfo') return undefined;
      return `host name ${typeof hostname === 'string' ? hostname : at.host} does not resolve; set ${settings.host} to an address (127.0.0.1, or 0.0.0.0 for every interface)`;
    default:
      return undefined;
  }
}

/** A place to listen that cannot be had: its message is the one line to print. */
export class ListenRefused extends Error {}
