// The API reference: Swagger UI over /openapi.json, without its own top bar
// (the page has Atrium's). Its servers are relative, so "Try it out" calls
// whichever host name this page was opened as.
globalThis.SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  layout: 'BaseLayout',
  validatorUrl: null,
  tryItOutEnabled: false,
  persistAuthorization: false,
});
