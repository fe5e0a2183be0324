/**
 * A short, honest description of a client from its User-Agent header, for a
 * session list: "Firefox on Linux", "Safari on iOS", "curl". It recognises a
 * handful of browser and OS families by their well-known tokens and nothing
 * more; User-Agent is self-reported, so the raw header is always kept beside it.
 */

/** Browser families, most specific first (Edge and Opera also say "Chrome", Chrome also says "Safari"). */
const browsers: [RegExp, string][] = [
  [/\bEdg(e|A|iOS)?\//, 'Edge'],
  [/\b(OPR|Opera)\//, 'Opera'],
  [/\bSamsungBrowser\//, 'Samsung Internet'],
  [/\b(Firefox|FxiOS)\//, 'Firefox'],
  [/\b(Chrome|CriOS|Chromium)\//, 'Chrome'],
  [/\bVersion\/[\d.]+.*\bSafari\//, 'Safari'],
  [/\b(MSIE |Trident\/)/, 'Internet Explorer'],
];

/** OS families, most specific first (Android and Chrome OS also say "Linux", iOS says "like Mac OS X"). */
const systems: [RegExp, string][] = [
  [/\b(iPhone|iPad|iPod)\b/, 'iOS'],
  [/\bAndroid\b/, 'Android'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\bWindows\b/, 'Windows'],
  [/\b(Macintosh|Mac OS X)\b/, 'macOS'],
  [/\bLinux\b/, 'Linux'],
];

function family(userAgent: string, table: [RegExp, string][]): string | undefined {
  return table.find(([pattern]) => pattern.test(userAgent))?.[1];
}

export function describeUserAgent(userAgent: string | null | undefined): string | null {
  const ua = userAgent?.trim();
  if (!ua) return null;
  const browser = family(ua, browsers);
  const os = family(ua, systems);
  if (browser && os) return `${browser} on ${os}`;
  if (browser) return browser;
  if (os) return `Unknown browser on ${os}`;
  // Not a browser: tools and libraries name themselves first ("curl/8.5.0", "python-requests/2.32").
  const product = /^([A-Za-z][\w.-]{0,39})(\/|\s|$)/.exec(ua)?.[1];
  return product && product !== 'Mozilla' ? product : null;
}
