/**
 * A small built-in list of public suffixes: names under which unrelated parties register
 * domains. `*.` in an allow-list is accepted only strictly below one of these, so `*.com`,
 * `*.co.uk` or `*.github.io` can never widen the allow-list to the whole internet.
 *
 * Every single-label name counts as a public suffix (the Public Suffix List's implicit `*`
 * rule), so only multi-label suffixes are listed. The list is deliberately conservative and
 * never fetched at run time: the worker has no business reaching the network for it.
 */

/** Multi-label suffixes (country second levels and shared hosting platforms). */
const MULTI_LABEL_SUFFIXES: ReadonlySet<string> = new Set([
  // United Kingdom
  'co.uk', 'org.uk', 'me.uk', 'ltd.uk', 'plc.uk', 'net.uk', 'ac.uk', 'gov.uk', 'nhs.uk', 'police.uk', 'sch.uk',
  // Australia, New Zealand
  'com.au', 'net.au', 'org.au', 'edu.au', 'gov.au', 'asn.au', 'id.au',
  'co.nz', 'org.nz', 'net.nz', 'ac.nz', 'govt.nz', 'geek.nz',
  // Asia
  'co.jp', 'ne.jp', 'or.jp', 'ac.jp', 'go.jp', 'ad.jp', 'ed.jp', 'gr.jp', 'lg.jp',
  'co.kr', 'or.kr', 'ne.kr', 'go.kr', 'ac.kr',
  'com.cn', 'net.cn', 'org.cn', 'gov.cn', 'edu.cn',
  'com.hk', 'org.hk', 'net.hk', 'edu.hk', 'gov.hk',
  'com.tw', 'org.tw', 'net.tw', 'edu.tw', 'gov.tw',
  'com.sg', 'org.sg', 'net.sg', 'edu.sg', 'gov.sg',
  'com.my', 'org.my', 'net.my', 'edu.my', 'gov.my',
  'co.in', 'net.in', 'org.in', 'firm.in', 'gen.in', 'ind.in', 'ac.in', 'edu.in', 'gov.in',
  'co.id', 'or.id', 'ac.id', 'go.id', 'web.id',
  'co.th', 'in.th', 'ac.th', 'go.th', 'or.th',
  'com.vn', 'net.vn', 'org.vn', 'edu.vn', 'gov.vn',
  'com.ph', 'net.ph', 'org.ph', 'edu.ph', 'gov.ph',
  'com.pk', 'net.pk', 'org.pk', 'edu.pk', 'gov.pk',
  'co.il', 'org.il', 'net.il', 'ac.il', 'gov.il',
  'com.tr', 'net.tr', 'org.tr', 'edu.tr', 'gov.tr',
  'com.sa', 'net.sa', 'org.sa', 'edu.sa', 'gov.sa',
  'ae.org', 'co.ae', 'net.ae', 'org.ae', 'gov.ae',
  // Americas
  'com.br', 'net.br', 'org.br', 'gov.br', 'edu.br',
  'com.mx', 'net.mx', 'org.mx', 'gob.mx', 'edu.mx',
  'com.ar', 'net.ar', 'org.ar', 'gob.ar', 'edu.ar',
  'com.co', 'net.co', 'org.co', 'gov.co', 'edu.co',
  'com.pe', 'net.pe', 'org.pe', 'gob.pe', 'edu.pe',
  'co.ve', 'com.ve',
  'qc.ca', 'on.ca', 'bc.ca', 'ab.ca',
  // Africa and Europe
  'co.za', 'org.za', 'net.za', 'gov.za', 'ac.za', 'web.za',
  'com.ng', 'org.ng', 'gov.ng', 'edu.ng',
  'co.ke', 'or.ke', 'ac.ke', 'go.ke',
  'com.eg', 'org.eg', 'gov.eg', 'edu.eg',
  'com.pl', 'net.pl', 'org.pl', 'gov.pl', 'edu.pl',
  'com.ua', 'net.ua', 'org.ua', 'gov.ua', 'edu.ua',
  'com.ru', 'net.ru', 'org.ru', 'msk.ru', 'spb.ru',
  'co.at', 'or.at', 'gv.at', 'ac.at',
  'com.es', 'org.es', 'nom.es', 'gob.es', 'edu.es',
  'com.pt', 'org.pt', 'gov.pt', 'edu.pt',
  'com.gr', 'org.gr', 'gov.gr', 'edu.gr',
  'co.it', 'gov.it', 'edu.it',
  // Infrastructure and shared hosting (private section of the Public Suffix List)
  'in-addr.arpa', 'ip6.arpa',
  'github.io', 'githubusercontent.com', 'gitlab.io', 'bitbucket.io', 'readthedocs.io',
  'herokuapp.com', 'herokussl.com', 'appspot.com', 'blogspot.com', 'firebaseapp.com', 'web.app',
  'netlify.app', 'vercel.app', 'now.sh', 'pages.dev', 'workers.dev', 'trycloudflare.com',
  'cloudfront.net', 'amazonaws.com', 's3.amazonaws.com', 'elasticbeanstalk.com', 'awsapps.com',
  'azurewebsites.net', 'azurestaticapps.net', 'cloudapp.net', 'cloudapp.azure.com', 'azureedge.net',
  'blob.core.windows.net', 'windows.net', 'trafficmanager.net',
  'fly.dev', 'onrender.com', 'railway.app', 'glitch.me', 'repl.co', 'replit.dev', 'deno.dev',
  'ngrok.io', 'ngrok-free.app', 'ngrok.app', 'loca.lt', 'localtunnel.me',
  'duckdns.org', 'dyndns.org', 'no-ip.org', 'ddns.net', 'hopto.org', 'zapto.org',
  'wordpress.com', 'wixsite.com', 'weebly.com', 'webflow.io',
  'myshopify.com', 'substack.com', 'notion.site', 'gitbook.io', 'surge.sh',
  'codepen.io', 'stackblitz.io', 'csb.app', 'pythonanywhere.com', 'azurecontainer.io',
  'digitaloceanspaces.com', 'ondigitalocean.app', 'run.app', 'cloudfunctions.net', 'googleusercontent.com',
]);

/**
 * True when `name` (lower-case ASCII, no trailing dot) is a public suffix: any single label, or
 * one of the listed multi-label suffixes.
 */
export function isPublicSuffix(name: string): boolean {
  if (!name.includes('.')) return true;
  return MULTI_LABEL_SUFFIXES.has(name);
}
