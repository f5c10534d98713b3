;;; transcript_retry.el --- llm_retry in the Emacs transcripts (batch ERT, no server)  -*- lexical-binding: t; -*-

;; Feeds synthetic lich/event payloads to the renderers of lich-eglot.el and (when lsp-mode is
;; installed) lich-lsp-mode.el and checks the *lich transcript* text: the partial answer of the
;; failed attempt ends its line, a notice names the provider, the error kind and what comes next,
;; and the restarted answer follows.
;;   emacs --batch -L editors/emacs -l tests/editors/emacs/transcript_retry.el \
;;         -f ert-run-tests-batch-and-exit

;;; Code:

(require 'ert)
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

(defun lich-test-transcript (buffer-name)
  (with-current-buffer buffer-name
    (buffer-substring-no-properties (point-min) (point-max))))

(ert-deftest lich-eglot-renders-llm-retry ()
  (let ((lich-eglot-transcript-buffer " *lich-test-eglot*"))
    (dolist (event (lich-test-events))
      (lich-eglot--render-event
       (list :type (car event) :task_id "t1" :run_id "r1" :seq 1 :ts 0 :data (cdr event))))
    (should (equal (lich-test-transcript lich-eglot-transcript-buffer) lich-test-expected))))

(defun lich-test-plist-to-hash (plist)
  "PLIST as lsp-mode's default JSON object: a hash table with string keys."
  (let ((table (make-hash-table :test #'equal)))
    (cl-loop for (key value) on plist by #'cddr
             do (puthash (substring (symbol-name key) 1) value table))
    table))

(ert-deftest lich-lsp-mode-renders-llm-retry ()
  (unless (require 'lsp-mode nil t)
    (ert-skip "lsp-mode is not installed"))
  (require 'lich-lsp-mode)
  (let ((buffer-name (symbol-value 'lich-lsp-mode-transcript-buffer)))
    (set 'lich-lsp-mode-transcript-buffer " *lich-test-lsp-mode*")
    (unwind-protect
        (progn
          (dolist (event (lich-test-events))
            (funcall 'lich-lsp-mode--event nil
                     (lich-test-plist-to-hash
                      (list :type (car event) :task_id "t1"
                            :data (lich-test-plist-to-hash (cdr event))))))
          (should (equal (lich-test-transcript " *lich-test-lsp-mode*") lich-test-expected)))
      (set 'lich-lsp-mode-transcript-buffer buffer-name))))

;;; transcript_retry.el ends here
