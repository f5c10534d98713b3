/** A fake LanguageClient that records what the extension configured and sent. */
export const clients: FakeClient[] = [];
/** Answers the next clients start with, on top of the defaults (e.g. a lich.status at start). */
export const nextResponses: Record<string, unknown> = {};
export class FakeClient {
  state = 1;
  features: { fillClientCapabilities(c: Record<string, unknown>): void }[] = [];
  notifications = new Map<string, (params: unknown) => void>();
  requests = new Map<string, (params: unknown) => unknown>();
  sent: { command: string; arguments: unknown[] }[] = [];
  responses: Record<string, unknown> = {
    "lich.status": { provider: { name: "fake", kind: "openai_compat", model: "fake-model", describe: "openai_compat fake-model @ http://127.0.0.1:9/v1" }, tasks: [] },
  };
  code2ProtocolConverter: { asRange(r: unknown): unknown } = { asRange: (r: unknown) => ({ converted: r }) };
  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: { command: string; args: string[] },
    readonly clientOptions: { initializationOptions: unknown; middleware: unknown },
  ) {
    clients.push(this);
    Object.assign(this.responses, nextResponses);
  }
  registerFeature(feature: FakeClient["features"][number]) {
    this.features.push(feature);
  }
  proposedFeatures = false;
  registerProposedFeatures() {
    this.proposedFeatures = true;
  }
  onNotification(method: string, handler: (params: unknown) => void) {
    this.notifications.set(method, handler);
  }
  onRequest(method: string, handler: (params: unknown) => unknown) {
    this.requests.set(method, handler);
  }
  stateListeners: ((change: { oldState: number; newState: number }) => void)[] = [];
  onDidChangeState(listener: (change: { oldState: number; newState: number }) => void) {
    this.stateListeners.push(listener);
    return { dispose: () => undefined };
  }
  async start() {
    this.state = 2;
    for (const listener of this.stateListeners) {
      listener({ oldState: 3, newState: 2 });
    }
  }
  async stop() {
    this.state = 1;
  }
  async dispose() {}
  async sendRequest(_type: unknown, params: { command: string; arguments: unknown[] }) {
    this.sent.push(params);
    return this.responses[params.command];
  }
  async sendNotification() {}
}

export const LanguageClient = FakeClient;
export const State = { Stopped: 1, Running: 2, Starting: 3 };
export const CloseAction = { DoNotRestart: 1, Restart: 2 };
export const ErrorAction = { Continue: 1, Shutdown: 2 };
export const ExecuteCommandRequest = { type: "workspace/executeCommand" };
export const DidChangeConfigurationNotification = { type: "workspace/didChangeConfiguration" };
