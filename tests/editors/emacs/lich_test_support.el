;;; lich_test_support.el --- helpers for the batch Emacs scenarios  -*- lexical-binding: t; -*-
;; Loaded by eglot_scenario.el and eglot_trust.el (run by tests/editors/test_emacs.py). A scenario
;; records checks and values, and `lich-test-main' writes them as JSON to LICH_TEST_RESULT:
;; {"error": ..., "checks": [...], "values": {...}, "emacs": ...}, then exits Emacs.

(require 'cl-lib)
(require 'json)

(defvar lich-test-checks nil)
(defvar lich-test-values nil)

(defun lich-test-check (name ok &optional detail)
  (push (list (cons 'name name) (cons 'ok (if ok t :json-false))
              (cons 'detail (format "%S" detail)))
        lich-test-checks)
  ok)

(defun lich-test-value (key value)
  (push (cons key value) lich-test-values))

(defun lich-test-wait (what seconds predicate)
  "Process events until PREDICATE holds; signal an error naming WHAT after SECONDS."
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (unless (funcall predicate)
      (error "timed out after %ss waiting for: %s" seconds what))))

(defun lich-test-write (error-text)
  (with-temp-file (getenv "LICH_TEST_RESULT")
    (insert (json-encode
             (list (cons 'error error-text)
                   (cons 'checks (vconcat (nreverse lich-test-checks)))
                   (cons 'values lich-test-values)
                   (cons 'emacs emacs-version))))))

(defun lich-test-file-text (file)
  (with-temp-buffer (insert-file-contents file) (buffer-string)))

(defvar eglot-sync-connect)
(defvar eglot-connect-timeout)
(defvar eglot-confirm-server-initiated-edits)
(defvar lich-eglot-command)
(declare-function eglot-current-server "eglot")
(declare-function lich-eglot-start "lich-eglot")

(defun lich-test-start-eglot (file)
  "Visit FILE and start lich-lsp ($LICH_TEST_PYTHON -m lich_lsp) for it through lich-eglot."
  (setq lich-eglot-command (list (getenv "LICH_TEST_PYTHON") "-m" "lich_lsp"))
  ;; Our own config choice for the test: wait for the server synchronously, generously.
  (setq eglot-sync-connect t
        eglot-connect-timeout 60
        eglot-confirm-server-initiated-edits nil)
  ;; Synchronous requests (lich.read, lich.applyPatch) default to a 10 s timeout: too tight
  ;; when the whole suite shares two cores.
  (with-no-warnings (setq jsonrpc-default-request-timeout 60))
  (find-file file)
  (lich-eglot-start)
  (lich-test-wait "eglot connected" 60
                  (lambda () (let ((s (eglot-current-server)))
                               (and s (object-of-class-p s 'lich-eglot-server))))))

(defun lich-test-main (run)
  "Call RUN, write the result file whatever happens, and exit Emacs."
  (condition-case err
      (progn (funcall run) (lich-test-write nil))
    (error (lich-test-write (error-message-string err))))
  (kill-emacs 0))

(provide 'lich_test_support)
;;; lich_test_support.el ends here
