;;; tmux_init.el --- Emacs in a terminal for tests/editors/test_emacs_tmux.py  -*- lexical-binding: t; -*-
;; Run in a tmux pane as a person runs Emacs:
;;   emacs -nw -q -L editors/emacs -l tests/editors/emacs/tmux_init.el
;; (-q skips the user's init file and keeps Debian's site-start, which puts Eglot and
;; markdown-mode on the load path.)  Environment: LICH_TEST_WORKSPACE, LICH_TEST_PYTHON,
;; LICH_TEST_VIEW: "chat" opens the chat alone in the frame; "ghost" leaves hello.py shown, at
;; its end, with `lich-completion-mode' on.  Nothing else is scripted: the test types.

(require 'eglot)
(require 'lich-eglot)
(require 'lich-chat)
(require 'lich-completion)

(setq lich-eglot-command (list (getenv "LICH_TEST_PYTHON") "-m" "lich_lsp")
      ;; Our own config choice for the test: wait for the server at start-up, generously.
      eglot-sync-connect t
      eglot-connect-timeout 60
      inhibit-startup-screen t
      make-backup-files nil
      auto-save-default nil
      create-lockfiles nil)
;; The chat's header line is then the screen's first line.
(menu-bar-mode -1)

(find-file (expand-file-name "hello.py" (getenv "LICH_TEST_WORKSPACE")))
(lich-eglot-start)
(goto-char (point-max))
(if (equal (getenv "LICH_TEST_VIEW") "chat")
    (progn (lich-chat) (delete-other-windows))
  (lich-completion-mode 1))

;;; tmux_init.el ends here
