;;; chat_scenario.el --- M-x lich-chat against the real lich-lsp in batch Emacs  -*- lexical-binding: t; -*-
;; Run by tests/editors/test_emacs.py (the fake provider in the user config):
;;   emacs --batch -L editors/emacs -l tests/editors/emacs/chat_scenario.el
;; Environment: LICH_TEST_WORKSPACE, LICH_TEST_PYTHON, LICH_TEST_RESULT, LICH_TEST_CLIENT
;; (eglot or lsp-mode).  From hello.py: `lich-chat', `@hel' completed by completion-at-point,
;; a two-line first message (C-j) sent with RET, a follow-up sent with RET while point sits in
;; the first answer (it must stay there), a message the provider refuses (the error inline),
;; then `lich-new-thread', `lich-threads' back to the thread and `lich-rewind' on the second
;; turn; then the lich server restarts (`eglot-reconnect', `lsp-workspace-restart'): the chat
;; reloads the thread from the new server, says so, keeps the draft input, and its next message
;; continues the thread there.  Writes {"error": ..., "checks": [...], "values": {...}} to LICH_TEST_RESULT.

(require 'cl-lib)
(require 'subr-x)

(load (expand-file-name "lich_test_support" (file-name-directory load-file-name)) nil t)

(defconst lich-test-client (or (getenv "LICH_TEST_CLIENT") "eglot"))

(if (equal lich-test-client "lsp-mode")
    (progn (require 'lsp-mode) (require 'lich-lsp-mode))
  (require 'eglot)
  (require 'lich-eglot))
(require 'lich-chat)

(defvar lsp-auto-guess-root)
(defvar lsp-enable-file-watchers)
(defvar lsp-restart)
(defvar lsp-enable-snippet)
(defvar lsp-keep-workspace-alive)
(defvar lsp-session-file)
(defvar lsp-response-timeout)
(defvar lich-lsp-mode-command)
(declare-function lsp "lsp-mode")
(declare-function lsp-find-workspace "lsp-mode")
(declare-function lsp-workspace-shutdown "lsp-mode")
(declare-function lsp-workspace-restart "lsp-mode")

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

(defun lich-test-lich-server (file)
  "The lich server (Eglot) or workspace (lsp-mode) of FILE, or nil."
  (with-current-buffer (find-buffer-visiting file)
    (if (equal lich-test-client "lsp-mode")
        (lsp-find-workspace 'lich file)
      (eglot-current-server))))

(defun lich-test-restart-server (file)
  "Restart the lich server of FILE the way a user would."
  (let ((server (lich-test-lich-server file)))
    (with-current-buffer (find-buffer-visiting file)
      (if (equal lich-test-client "lsp-mode")
          (lsp-workspace-restart server)
        (eglot-reconnect server)))))

(defun lich-test-conversation ()
  "The chat's conversation text as shown (before the prompt marker).
A tool call's hidden details are left out, as on the screen."
  (let ((position (point-min)) (end (marker-position lich-chat--output)) parts)
    (while (< position end)
      (let ((next (next-single-char-property-change position 'invisible nil end)))
        (unless (invisible-p position)
          (push (buffer-substring-no-properties position next) parts))
        (setq position next)))
    (apply #'concat (nreverse parts))))

(defun lich-test-send-with-ret (text)
  "Type TEXT at the chat's input and press RET."
  (goto-char (point-max))
  (insert text)
  (execute-kbd-macro (kbd "RET")))

(defun lich-test-wait-turn (what)
  (lich-test-wait what 90 (lambda () (not (lich-chat-running-p)))))

(defun lich-test-run ()
  (let* ((ws (file-name-as-directory (getenv "LICH_TEST_WORKSPACE")))
         (file (expand-file-name "hello.py" ws)))
    (if (equal lich-test-client "lsp-mode")
        (lich-test-start-lsp-mode file)
      (lich-test-start-eglot file))
    (let ((chat (lich-chat)))
      (switch-to-buffer chat)
      (lich-test-check "lich-chat-mode" (derived-mode-p 'lich-chat-mode) major-mode)
      (lich-test-check "RET sends, C-j is a newline"
                       (and (eq (key-binding (kbd "RET")) #'lich-chat-send)
                            (eq (key-binding (kbd "C-j")) #'newline)))
      ;; @ completion through lich.mentions.
      (goto-char (point-max))
      (insert "look at @hel")
      (completion-at-point)
      (lich-test-value 'completed (lich-chat--input-text))
      (lich-test-check "@hel completes to @hello.py"
                       (equal (lich-chat--input-text) "look at @hello.py")
                       (lich-chat--input-text))
      (delete-region lich-chat--input (point-max))
      ;; The conversation is read-only.
      (lich-test-check "the prompt marker is read-only"
                       (condition-case nil
                           (progn (goto-char (point-min)) (insert "x") nil)
                         (text-read-only t)))
      ;; The first message, two lines (C-j), sent with RET.
      (goto-char (point-max))
      (insert "First question")
      (execute-kbd-macro (kbd "C-j"))
      (insert "about hello.py")
      (lich-test-check "C-j kept the input" (equal (lich-chat--input-text)
                                                   "First question\nabout hello.py"))
      (execute-kbd-macro (kbd "RET"))
      (lich-test-check "RET sent the input" (and (lich-chat-running-p)
                                                 (equal (lich-chat--input-text) "")))
      (lich-test-wait-turn "the first answer")
      (let ((text (lich-test-conversation)))
        (lich-test-value 'after_first text)
        (lich-test-check "the first prompt is shown"
                         (string-match-p "^You: First question\nabout hello.py$" text) text)
        (lich-test-check "the tool call is one line" (string-match-p "^  ▸ read_file hello.py: ok$" text) text)
        (lich-test-check "the first answer is shown"
                         (string-match-p "^lich: The answer is 42\\.$" text) text))
      (let ((thread lich-chat-thread))
        (lich-test-value 'thread thread)
        (lich-test-check "the chat named its new thread (new_thread)"
                         (and (stringp thread) (string-prefix-p "chat-" thread))
                         thread)
        ;; The turn number is the server's (lich.ask's `turn'), not the chat's count plus one:
        ;; a count gone stale (turns another client added) is corrected by the answer.
        (setq lich-chat--turns 40)
        ;; The follow-up: RET, then the user moves into the first answer while it streams.
        (lich-test-send-with-ret "Follow-up question")
        (goto-char (point-min))
        (search-forward "answer is 42")
        (let ((where (point)))
          (lich-test-wait-turn "the follow-up's answer")
          (lich-test-check "point stayed where the user put it"
                           (and (= (point) where)
                                (looking-back "answer is 42" (line-beginning-position)))
                           (list where (point))))
        (lich-test-check "the chat counts the server's turns" (= lich-chat--turns 2) lich-chat--turns)
        (save-excursion
          (goto-char (point-min))
          (search-forward "You: Follow-up question")
          (lich-test-check "the follow-up's text is the server's turn 2"
                           (equal (lich-chat-turn-at-point) 2) (lich-chat-turn-at-point)))
        (let ((text (lich-test-conversation)))
          (lich-test-value 'after_follow_up text)
          (lich-test-check "both answers are in the buffer"
                           (and (string-match-p "^lich: The answer is 42\\.$" text)
                                (string-match-p "^You: Follow-up question$" text)
                                (string-match-p "^lich: Still 42, as I said\\.$" text))
                           text))
        (lich-test-check "the follow-up stayed on the thread" (equal lich-chat-thread thread))
        ;; A message the provider refuses: the error is said inline.
        (lich-test-send-with-ret "This one fails")
        (lich-test-wait-turn "the failed turn")
        (let ((text (lich-test-conversation)))
          (lich-test-value 'after_error text)
          (lich-test-check "the provider error is inline, in plain words"
                           (and (string-match-p "^Error: .*401" text)
                                (not (string-match-p "Traceback" text)))
                           text))
        ;; A new thread empties the chat; lich-threads brings the thread back.
        (lich-new-thread)
        (lich-test-check "lich-new-thread empties the chat"
                         (and (null lich-chat-thread) (string-empty-p (string-trim (lich-test-conversation))))
                         (lich-test-conversation))
        (let ((offered nil))
          (cl-letf (((symbol-function 'completing-read)
                     (lambda (_prompt table &rest _)
                       (setq offered (all-completions "" table))
                       (cl-find-if (lambda (label) (string-suffix-p thread label)) offered))))
            (lich-threads))
          (lich-test-value 'offered (vconcat offered))
          (lich-test-check "lich-threads offered the thread" (= (length offered) 1) offered))
        (let ((text (lich-test-conversation)))
          (lich-test-value 'reloaded text)
          (lich-test-check "lich-threads loaded the thread"
                           (and (equal lich-chat-thread thread)
                                (string-match-p "^You: First question" text)
                                (string-match-p "^  ▸ read_file hello.py: ok$" text)
                                (string-match-p "^lich: The answer is 42\\.$" text)
                                (string-match-p "^lich: Still 42, as I said\\.$" text)
                                (string-match-p "^Error: .*401" text))
                           text))
        ;; Rewind on the second turn (point on its prompt): turns 2 and 3 are taken back.
        (goto-char (point-min))
        (search-forward "You: Follow-up question")
        (lich-test-check "the turn at point" (equal (lich-chat-turn-at-point) 2)
                         (lich-chat-turn-at-point))
        (cl-letf (((symbol-function 'y-or-n-p) (lambda (&rest _) t)))
          (call-interactively #'lich-rewind))
        (let ((text (lich-test-conversation)))
          (lich-test-value 'rewound text)
          (lich-test-check "the rewound turns are marked"
                           (and (string-match-p "^You: First question" text)
                                (string-match-p "^You (rewound): Follow-up question$" text)
                                (string-match-p "^You (rewound): This one fails$" text))
                           text))
        (let ((turns (lich-json-get (lich-chat--execute "lich.thread" (list :thread thread)) "turns")))
          (lich-test-check "the server rewound turns 2 and 3"
                           (equal (mapcar (lambda (turn) (eq (lich-json-get turn "discarded") t))
                                          (lich--json-array turns))
                                  '(nil t t))
                           turns))
        ;; The server restarts: the chat reloads the thread from the new one and says so.
        (with-current-buffer chat
          (goto-char (point-max))
          (insert "draft")
          (let ((old (lich-test-lich-server file)))
            (lich-test-restart-server file)
            (lich-test-wait "the chat reloaded the thread after the restart" 90
                            (lambda ()
                              (string-match-p "^(the lich server restarted: thread reloaded)$"
                                              (lich-test-conversation))))
            (let ((new (lich-test-lich-server file))
                  (text (lich-test-conversation)))
              (lich-test-value 'after_restart text)
              (lich-test-check "a new lich server answers" (and new (not (eq new old))))
              (lich-test-check "the chat re-rendered the thread after the restart"
                               (and (equal lich-chat-thread thread)
                                    (string-match-p "^lich: The answer is 42\\.$" text)
                                    (string-match-p "^You (rewound): Follow-up question$" text)
                                    (string-match-p
                                     "^(the lich server restarted: thread reloaded)\n\\'" text))
                               text)
              (lich-test-check "the draft input survived the reload"
                               (equal (lich-chat--input-text) "draft")
                               (lich-chat--input-text))))
          ;; The next message continues the thread on the new server.
          (delete-region lich-chat--input (point-max))
          (lich-test-send-with-ret "After the restart")
          (lich-test-wait-turn "the answer after the restart")
          (let ((text (lich-test-conversation)))
            (lich-test-value 'after_restart_turn text)
            (lich-test-check "the thread goes on after the restart"
                             (and (equal lich-chat-thread thread)
                                  (string-match-p "^lich: Back after the restart\\.$" text))
                             text)))))
    (with-current-buffer (find-buffer-visiting file)
      (if (equal lich-test-client "lsp-mode")
          (lsp-workspace-shutdown (lsp-find-workspace 'lich file))
        (eglot-shutdown (eglot-current-server))))))

(lich-test-main #'lich-test-run)
;;; chat_scenario.el ends here
