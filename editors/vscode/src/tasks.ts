/** Running agent tasks as the client sees them: requests in flight plus lich/event run markers. */

export interface TaskInfo {
  key: string;
  taskId?: string;
  title: string;
  startedAt: number;
}

type Listener = () => void;

export class TaskTracker {
  private readonly tasks = new Map<string, TaskInfo>();
  private readonly listeners: Listener[] = [];
  private nextLocal = 1;

  onDidChange(listener: Listener): { dispose(): void } {
    this.listeners.push(listener);
    return {
      dispose: () => {
        const index = this.listeners.indexOf(listener);
        if (index >= 0) {
          this.listeners.splice(index, 1);
        }
      },
    };
  }

  /** A lich.ask request sent by this client; returns the key to pass to `end`. */
  begin(title: string): string {
    const key = `local-${this.nextLocal++}`;
    this.tasks.set(key, { key, title, startedAt: Date.now() });
    this.fire();
    return key;
  }

  /** The server told us the id of a task we started (or of one started elsewhere). */
  attachId(key: string | undefined, taskId: string): void {
    if (key && this.tasks.has(key)) {
      const info = this.tasks.get(key)!;
      info.taskId = taskId;
    }
    this.fire();
  }

  end(key: string): void {
    if (this.tasks.delete(key)) {
      this.fire();
    }
  }

  /** Server-side run markers (lich/event run_start/run_end) for tasks not started by this client. */
  serverStarted(taskId: string, title: string): void {
    for (const info of this.tasks.values()) {
      if (info.taskId === taskId) {
        return;
      }
    }
    // Our own request without a known id yet: adopt the oldest such task instead of doubling it.
    for (const info of this.tasks.values()) {
      if (!info.taskId && info.key.startsWith("local-")) {
        info.taskId = taskId;
        this.fire();
        return;
      }
    }
    const key = `server-${taskId}`;
    this.tasks.set(key, { key, taskId, title, startedAt: Date.now() });
    this.fire();
  }

  serverEnded(taskId: string): void {
    for (const [key, info] of this.tasks) {
      if (info.taskId === taskId && key.startsWith("server-")) {
        this.tasks.delete(key);
        this.fire();
      }
    }
  }

  clear(): void {
    if (this.tasks.size > 0) {
      this.tasks.clear();
      this.fire();
    }
  }

  list(): TaskInfo[] {
    return [...this.tasks.values()].sort((a, b) => a.startedAt - b.startedAt);
  }

  get size(): number {
    return this.tasks.size;
  }

  private fire(): void {
    for (const listener of [...this.listeners]) {
      listener();
    }
  }
}
