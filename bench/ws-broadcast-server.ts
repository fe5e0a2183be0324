import http from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';

/**
 * The fan-out reference: a bare `ws` server speaking just enough of
 * graphql-transport-ws (connection_ack, remembering each subscribe's id) and,
 * on `POST /fire?job=<id>`, sending every subscription one `next` message
 * shaped like Atrium's progress update. Each message is serialised per socket,
 * as any server must (the id differs per subscriber). No GraphQL, no policy,
 * no event bus: the floor of one process writing to that many sockets on
 * this machine, the reference of the fan-out target.
 */
const subscriptions: { socket: WebSocket; id: string }[] = [];
const server = http.createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://localhost');
  if (request.method !== 'POST' || url.pathname !== '/fire') return void response.writeHead(404).end();
  const jobId = url.searchParams.get('job') ?? '';
  for (const { socket, id } of subscriptions) {
    socket.send(JSON.stringify({ id, type: 'next', payload: { data: { companyJobProgress: { jobId, status: 'cancelled' } } } }));
  }
  response.end();
});
const sockets = new WebSocketServer({ server, path: '/graphql', perMessageDeflate: false });
sockets.on('connection', (socket) => {
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as { type: string; id?: string };
    if (message.type === 'connection_init') socket.send(JSON.stringify({ type: 'connection_ack' }));
    if (message.type === 'subscribe' && message.id) subscriptions.push({ socket, id: message.id });
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
