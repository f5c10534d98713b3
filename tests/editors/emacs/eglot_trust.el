;;; eglot_trust.el --- `lich-eglot-trust-workspace' in batch Emacs  -*- lexical-binding: t; -*-
;; Run by tests/editors/test_emacs.py on a workspace whose .lich/config.json names a plugin:
;;   emacs --batch -L editors/emacs -l tests/editors/emacs/eglot_trust.el
;; The server asks once (window/showMessageRequest, Trust / Not now): Eglot's handler reads the
;; answer with `completing-read', stubbed here to say "Not now". Then M-x
;; lich-eglot-trust-workspace trusts the file and C-u M-x lich-eglot-trust-workspace revokes it;
;; each shows the server's message naming the state, and lich.status follows.

(require 'cl-lib)
(require 'eglot)
(require 'lich-eglot)

(load (expand-file-name "lich_test_support" (file-name-directory load-file-name)) nil t)

(defvar lich-test-prompts nil "Prompts Eglot showed for window/showMessageRequest.")
(defvar lich-test-messages nil "Every `message' text, newest first.")

(defun lich-test--record-message (text)
  (when (stringp text) (push text lich-test-messages))
  text)

(defun lich-test--answer-not-now (prompt &rest _)
  "Eglot's showMessageRequest handler asks with `completing-read': record PROMPT, say no."
  (push prompt lich-test-prompts)
  "Not now")

(defun lich-test--trust-state ()
  (plist-get (plist-get (lich-eglot-execute "lich.status" nil) :trust) :state))

(defun lich-test--trust-command (revoke)
  "Run the interactive command (REVOKE: with a prefix argument); return (result . message)."
  (setq lich-test-messages nil)
  (let* ((current-prefix-arg (and revoke '(4)))
         (result (call-interactively #'lich-eglot-trust-workspace)))
    (cons result (cl-find-if (lambda (m) (string-prefix-p "lich: " m)) lich-test-messages))))

(defun lich-test-run ()
  (let* ((ws (file-name-as-directory (getenv "LICH_TEST_WORKSPACE")))
         (config (expand-file-name ".lich/config.json" ws)))
    (advice-add 'message :filter-return #'lich-test--record-message)
    (advice-add 'completing-read :override #'lich-test--answer-not-now)
    (lich-test-start-eglot (expand-file-name "hello.py" ws))
    (lich-test-wait "the server asked to trust the workspace" 30 (lambda () lich-test-prompts))
    (lich-test-check "the question names the config file"
                     (string-match-p (regexp-quote config) (car lich-test-prompts))
                     lich-test-prompts)
    (let ((trust (plist-get (lich-eglot-execute "lich.status" nil) :trust)))
      (lich-test-value 'status_before trust)
      (lich-test-check "untrusted after Not now" (equal (plist-get trust :state) "untrusted") trust)
      (lich-test-check "plugins wait for trust"
                       (equal (mapcar (lambda (k) (plist-get k :key)) (plist-get trust :keys))
                              '("plugins"))
                       trust))
    (let* ((answer (lich-test--trust-command nil))
           (result (car answer))
           (shown (cdr answer)))
      (lich-test-value 'trust_message shown)
      (lich-test-check "M-x lich-eglot-trust-workspace: trusted"
                       (equal (plist-get result :state) "trusted") result)
      (lich-test-check "the message names the state"
                       (and shown (string-match-p "trusted" shown)
                            (not (string-match-p "untrusted" shown)))
                       shown)
      (lich-test-check "the message is the server's"
                       (and shown (string-match-p
                                   (regexp-quote (replace-regexp-in-string
                                                  "\\`lich: *" "" (plist-get result :message)))
                                   shown))
                       (list shown result)))
    (lich-test-check "status: trusted" (equal (lich-test--trust-state) "trusted"))
    (let* ((answer (lich-test--trust-command t))
           (result (car answer))
           (shown (cdr answer)))
      (lich-test-value 'revoke_message shown)
      (lich-test-check "C-u M-x lich-eglot-trust-workspace: untrusted"
                       (equal (plist-get result :state) "untrusted") result)
      (lich-test-check "the revoke message names the state"
                       (and shown (string-match-p "untrusted" shown)) shown))
    (lich-test-check "status: untrusted again" (equal (lich-test--trust-state) "untrusted"))
    (lich-test-check "asked only once" (= (length lich-test-prompts) 1) lich-test-prompts)
    (advice-remove 'completing-read #'lich-test--answer-not-now)
    (eglot-shutdown (eglot-current-server))))

(lich-test-main #'lich-test-run)
