;;; completion_scenario.el --- completion-at-point from lich's completion model  -*- lexical-binding: t; -*-
;; Run by tests/editors/test_emacs.py (the fake provider as the user config's `completion'):
;;   emacs --batch -L editors/emacs -l tests/editors/emacs/completion_scenario.el
;; Environment: LICH_TEST_WORKSPACE, LICH_TEST_PYTHON, LICH_TEST_RESULT, LICH_TEST_CLIENT
;; (eglot or lsp-mode).  In hello.py: type `x = max(va', call `completion-at-point' (the
;; client's capf, then `completion-in-region' inserts the only candidate and runs its exit
;; function, as company and corfu do); the buffer reads the suggestion.  Then the same through
;; the capf alone (what a completion UI calls), then as ghost text (`lich-completion-mode':
;; shown after point, TAB inserts it), and with `lich-eglot-completions' off Eglot's capf is
;; gone from the lich buffer.  Writes {"error": ..., "checks": [...], "values": {...}}.

(require 'cl-lib)
(require 'subr-x)

(load (expand-file-name "lich_test_support" (file-name-directory load-file-name)) nil t)

(defconst lich-test-client (or (getenv "LICH_TEST_CLIENT") "eglot"))

(if (equal lich-test-client "lsp-mode")
    (progn
      ;; What package.el does at startup (batch Emacs skips it): without the autoloads
      ;; lsp-mode's buffer setup stops at `lsp-modeline-workspace-status-mode', before it turns
      ;; on `lsp-completion-mode'.
      (load "lsp-mode-autoloads" nil t)
      (require 'lsp-mode)
      (require 'lich-lsp-mode))
  (require 'eglot)
  (require 'lich-eglot))
(require 'lich-completion)

(defvar lsp-auto-guess-root)
(defvar lsp-enable-file-watchers)
(defvar lsp-restart)
(defvar lsp-enable-snippet)
(defvar lsp-keep-workspace-alive)
(defvar lsp-session-file)
(defvar lsp-response-timeout)
(defvar lich-lsp-mode-command)
(defvar lich-eglot-completions)
(declare-function lsp "lsp-mode")
(declare-function lsp-find-workspace "lsp-mode")
(declare-function lsp-workspace-shutdown "lsp-mode")
(declare-function eglot-completion-at-point "eglot")
(declare-function eglot-reconnect "eglot")
(declare-function eglot-shutdown "eglot")

(defconst lich-test-typed "x = max(va")
(defconst lich-test-expected "x = max(value_a, value_b)")

(defun lich-test-start-lsp-mode (file)
  (setq lsp-auto-guess-root t
        lsp-enable-file-watchers nil
        lsp-restart 'ignore
        lsp-enable-snippet nil
        lsp-keep-workspace-alive nil
        lsp-session-file (expand-file-name "lsp-session" (getenv "HOME"))
        lsp-response-timeout 60
        lich-lsp-mode-command (list (getenv "LICH_TEST_PYTHON") "-m" "lich_lsp"))
  (find-file file)
  (lsp)
  (lich-test-wait "lsp-mode initialized lich" 60
                  (lambda ()
                    (let ((workspace (lsp-find-workspace 'lich file)))
                      (and workspace
                           (eq (with-no-warnings (lsp--workspace-status workspace))
                               'initialized))))))

(defun lich-test-type-line ()
  "A new last line holding `lich-test-typed', point at its end."
  (goto-char (point-max))
  (insert lich-test-typed))

(defun lich-test-last-line ()
  (save-excursion
    (goto-char (point-max))
    (buffer-substring-no-properties (line-beginning-position) (line-end-position))))

(defun lich-test-complete-through-capf ()
  "What company and corfu do: call the capfs, show the candidates, insert the chosen one with
`completion-in-region' semantics and run the capf's exit function."
  (let* ((capf (run-hook-wrapped 'completion-at-point-functions
                                 (lambda (fn) (and (functionp fn) (funcall fn)))))
         (start (nth 0 capf))
         (end (nth 1 capf))
         (table (nth 2 capf))
         (props (nthcdr 3 capf))
         (prefix (buffer-substring-no-properties start end))
         (candidates (all-completions prefix table)))
    (lich-test-value (intern (format "capf_candidates_%s" lich-test-client))
                     (vconcat (mapcar #'substring-no-properties candidates)))
    (lich-test-check "the capf offers one candidate" (= (length candidates) 1) candidates)
    (let ((chosen (car candidates)))
      (delete-region start end)
      (goto-char start)
      (insert (substring-no-properties chosen))
      (when-let ((exit (plist-get props :exit-function)))
        (funcall exit chosen 'finished)))))

(defun lich-test-run ()
  (let* ((ws (file-name-as-directory (getenv "LICH_TEST_WORKSPACE")))
         (file (expand-file-name "hello.py" ws)))
    (if (equal lich-test-client "lsp-mode")
        (lich-test-start-lsp-mode file)
      (lich-test-start-eglot file))
    ;; M-x completion-at-point: the only candidate is inserted and its textEdit applied.
    (lich-test-type-line)
    (completion-at-point)
    (lich-test-value 'line_after_completion_at_point (lich-test-last-line))
    (lich-test-wait "the suggestion in the buffer" 30
                    (lambda () (equal (lich-test-last-line) lich-test-expected)))
    (lich-test-value 'after_completion_at_point (lich-test-last-line))
    (lich-test-check "completion-at-point inserted the suggestion"
                     (equal (lich-test-last-line) lich-test-expected) (lich-test-last-line))
    (lich-test-check "point after the insertion" (eolp) (point))
    ;; A completion UI: the capf's candidates, then the chosen one inserted.
    (delete-region (line-beginning-position) (line-end-position))
    (insert lich-test-typed)
    (lich-test-complete-through-capf)
    (lich-test-value 'after_capf (lich-test-last-line))
    (lich-test-check "the capf's candidate inserted the suggestion"
                     (equal (lich-test-last-line) lich-test-expected) (lich-test-last-line))
    ;; Ghost text through this client's adapter (lich-completion-mode): the suggestion shows
    ;; after point without entering the buffer, and TAB inserts it.
    (lich-completion-mode 1)
    (delete-region (line-beginning-position) (line-end-position))
    (insert lich-test-typed)
    ;; What Emacs does once the user stops typing (batch Emacs never idles): its idle timers run,
    ;; Eglot's sends the edit; then lich-completion-mode's own timer asks.
    (mapc #'timer-event-handler (copy-sequence timer-idle-list))
    (lich-completion--request (current-buffer))
    (lich-test-wait "the ghost text" 30 (lambda () lich-completion--shown))
    (lich-test-value (intern (format "ghost_%s" lich-test-client)) lich-completion--shown)
    (lich-test-check "the ghost text shows the suggestion, the buffer has only the typed text"
                     (and (equal (overlay-get lich-completion--overlay 'after-string)
                                 "lue_a, value_b)")
                          (equal (lich-test-last-line) lich-test-typed))
                     (list lich-completion--shown (lich-test-last-line)))
    (execute-kbd-macro (kbd "TAB"))
    (lich-test-check "TAB inserted the ghost text"
                     (and (equal (lich-test-last-line) lich-test-expected)
                          (null lich-completion--overlay))
                     (lich-test-last-line))
    (lich-completion-mode -1)
    (if (equal lich-test-client "lsp-mode")
        (lsp-workspace-shutdown (lsp-find-workspace 'lich buffer-file-name))
      ;; `lich-eglot-completions' nil: the lich buffer no longer asks lich for completions.
      (lich-test-check "Eglot's capf is on in the lich buffer"
                       (memq #'eglot-completion-at-point completion-at-point-functions)
                       completion-at-point-functions)
      (setq lich-eglot-completions nil)
      (eglot-reconnect (eglot-current-server))
      (lich-test-wait "eglot reconnected without completions" 60
                      (lambda () (and (eglot-current-server)
                                      (not (memq #'eglot-completion-at-point
                                                 completion-at-point-functions)))))
      (lich-test-check "lich-eglot-completions nil: no Eglot capf in the lich buffer"
                       (not (memq #'eglot-completion-at-point completion-at-point-functions))
                       completion-at-point-functions)
      (eglot-shutdown (eglot-current-server)))))

(lich-test-main #'lich-test-run)
;;; completion_scenario.el ends here
