;;; transcript_retry.el --- llm_retry in the Emacs transcript, through both adapters (batch ERT, no server)  -*- lexical-binding: t; -*-

;; Feeds synthetic lich/event payloads to the notification handlers the adapters register
;; (lich-eglot.el's `eglot-handle-notification' method on a `lich-eglot-server' and, when
;; lsp-mode is installed, lich-lsp-mode.el's client's "lich/event" handler), which both hand
;; them to lich.el's renderer, and checks the *lich transcript* text: the partial answer of the
;; failed attempt ends its line, a notice names the provider, the error kind and what comes next,
;; and the restarted answer follows.  Also checks that the adapters' commands are the shared ones.
;;   emacs --batch -L editors/emacs -l tests/editors/emacs/transcript_retry.el \
;;         -f ert-run-tests-batch-and-exit

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'lich-eglot)

(defconst lich-test-retry
  '(:turn 1 :provider "primary" :attempt 1 :max_attempts 3 :kind "timeout"
    :message "read timed out" :action "retry" :delay_s 1.5 :next_provider "primary"
    :discarded_chars 9))

(defconst lich-test-failover
  '(:turn 1 :provider "a" :attempt 2 :max_attempts 2 :kind "server" :action "failover"
    :delay_s 0 :next_provider "b" :discarded_chars 0))

(defconst lich-test-expected
  (concat "▶ t1\n"
          "The answe\n"
          "… provider primary failed (timeout): retrying in 1.5 s (attempt 2 of 3);"
          " the answer restarts below\n"
          "The answer is 42.\n"
          "… provider a failed (server): failing over to b\n"))

(defun lich-test-events ()
  "The event sequence, as (type . data) pairs."
  (list (cons "run_start" nil)
        (cons "llm_start" '(:turn 1))
        (cons "text_delta" '(:turn 1 :text "The answ"))
        (cons "text_delta" '(:turn 1 :text "e"))
        (cons "llm_retry" lich-test-retry)
        (cons "text_delta" '(:turn 1 :text "The answer is 42."))
        (cons "llm_retry" lich-test-failover)))

(defconst lich-test-commands
  '("ask" "cancel" "apply-patch" "status" "trust-workspace" "run-tests" "transcript")
  "The user-facing commands every adapter keeps, as lich-PREFIX-NAME.")

(defun lich-test-check-aliases (prefix)
  "PREFIX-NAME is the shared command lich-NAME, for every name (and -execute, -execute-async)."
  (dolist (name (append lich-test-commands '("execute" "execute-async")))
    (let ((own (intern (format "%s-%s" prefix name)))
          (shared (intern (format "lich-%s" name))))
      (should (fboundp own))
      (should (eq (indirect-function own) (indirect-function shared)))))
  (dolist (name lich-test-commands)
    (should (commandp (intern (format "%s-%s" prefix name))))))

(defmacro lich-test-with-transcript (name &rest body)
  "Run BODY with the transcript in a fresh buffer NAME; return its text."
  (declare (indent 1))
  `(let ((lich-transcript-buffer ,name)
         (lich--streaming nil))
     (unwind-protect
         (progn ,@body
                (with-current-buffer lich-transcript-buffer
                  (buffer-substring-no-properties (point-min) (point-max))))
       (when (get-buffer ,name) (kill-buffer ,name)))))

(ert-deftest lich-eglot-renders-llm-retry ()
  (let* ((process (make-pipe-process :name "lich-test-eglot" :noquery t))
         (server (make-instance 'lich-eglot-server :name "lich-test" :process process)))
    (unwind-protect
        (should (equal (lich-test-with-transcript " *lich-test-eglot*"
                         (dolist (event (lich-test-events))
                           ;; As Eglot dispatches a notification: its params as keyword args.
                           (apply #'eglot-handle-notification server 'lich/event
                                  (list :type (car event) :task_id "t1" :run_id "r1" :seq 1 :ts 0
                                        :data (cdr event)))))
                       lich-test-expected))
      (delete-process process))))

(ert-deftest lich-eglot-commands-are-the-shared-ones ()
  (lich-test-check-aliases "lich-eglot")
  (should (commandp 'lich-eglot-start))
  (should (fboundp 'lich-eglot-register))
  ;; The old variable names still work.
  (let ((lich-transcript-buffer "*x*"))
    (should (equal (symbol-value 'lich-eglot-transcript-buffer) "*x*"))))

(defun lich-test-plist-to-hash (plist)
  "PLIST as lsp-mode's default JSON object: a hash table with string keys."
  (let ((table (make-hash-table :test #'equal)))
    (cl-loop for (key value) on plist by #'cddr
             do (puthash (substring (symbol-name key) 1) value table))
    table))

(defun lich-test-lsp-mode-handler (kind method)
  "The handler lich-lsp-mode.el registered for METHOD; KIND is notification or request."
  (let* ((client (gethash 'lich (symbol-value 'lsp-clients)))
         (table (funcall (if (eq kind 'notification)
                             'lsp--client-notification-handlers
                           'lsp--client-request-handlers)
                         client)))
    (gethash method table)))

(ert-deftest lich-lsp-mode-renders-llm-retry ()
  (unless (require 'lsp-mode nil t)
    (ert-skip "lsp-mode is not installed"))
  (require 'lich-lsp-mode)
  (let ((handler (lich-test-lsp-mode-handler 'notification "lich/event")))
    (should (functionp handler))
    (should (equal (lich-test-with-transcript " *lich-test-lsp-mode*"
                     (dolist (event (lich-test-events))
                       (funcall handler nil
                                (lich-test-plist-to-hash
                                 (list :type (car event) :task_id "t1"
                                       :data (lich-test-plist-to-hash (cdr event)))))))
                   lich-test-expected))))

(ert-deftest lich-lsp-mode-commands-are-the-shared-ones ()
  (unless (require 'lsp-mode nil t)
    (ert-skip "lsp-mode is not installed"))
  (require 'lich-lsp-mode)
  (lich-test-check-aliases "lich-lsp-mode")
  (should (functionp (lich-test-lsp-mode-handler 'request "lich/saveDocuments"))))

;;; transcript_retry.el ends here
