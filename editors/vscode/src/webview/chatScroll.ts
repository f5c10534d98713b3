/// <reference lib="dom" />
/**
 * Whether the chat's log follows new content. The decision is made from where the *user* left
 * the scroll position (each scroll event), never by measuring after content was added: a long
 * streamed chunk or a tall new turn must not make the view stop following (it did when "near the
 * bottom" was measured after appending). Sending and opening a thread jump to the end; streaming
 * follows while the user is at the bottom; once they scroll up it stays put and `onAway(true)`
 * shows "Jump to latest", until they scroll back down or press it.
 */
export class ScrollFollower {
  private following = true;

  constructor(
    private readonly el: HTMLElement,
    private readonly onAway: (away: boolean) => void,
    /** How close to the bottom still counts as "at the bottom", in pixels. */
    private readonly slack = 24,
  ) {
    el.addEventListener("scroll", () => this.onScroll());
  }

  get isFollowing(): boolean {
    return this.following;
  }

  private atBottom(): boolean {
    return this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight <= this.slack;
  }

  private onScroll(): void {
    this.following = this.atBottom();
    this.onAway(!this.following);
  }

  /** Scroll to the newest content and follow it from now on (send, a thread opened, the button). */
  jump(): void {
    this.following = true;
    this.el.scrollTop = this.el.scrollHeight;
    this.onAway(false);
  }

  /** Content was added: follow it, or let the user know there is more below. */
  contentAdded(): void {
    if (this.following) {
      this.el.scrollTop = this.el.scrollHeight;
    } else {
      this.onAway(true);
    }
  }
}
