;;; eglot_run_tests.el --- `lich-eglot-run-tests' in batch Emacs  -*- lexical-binding: t; -*-
;; Run by tests/editors/test_emacs.py on a small pytest project with one failing test:
;;   emacs --batch -L editors/emacs -l tests/editors/emacs/eglot_run_tests.el
;; Environment: LICH_TEST_WORKSPACE, LICH_TEST_PYTHON, LICH_TEST_RESULT, and LICH_TEST_DATA (JSON:
;; test_file, code_file, passing_id, fail_line = 0-based line of the failing assert, code_line =
;; 0-based line of the bug, fixed_line = its fixed text).
;;  1. C-u M-x lich-eglot-run-tests with the passing test's node id: green, the filter went along.
;;  2. M-x lich-eglot-run-tests: red; the message names the failing test, and the failure is a
;;     Flymake diagnostic (source "lich tests", an error) on the assert line of the test buffer.
;;  3. Fix the bug in the code buffer without saving, run again from the test buffer: the server
;;     saved the buffer, the run is green and the diagnostic is gone.

(require 'cl-lib)
(require 'json)
(require 'flymake)
(require 'eglot)
(require 'lich-eglot)

(load (expand-file-name "lich_test_support" (file-name-directory load-file-name)) nil t)

(defvar lich-test-messages nil "Every `message' text, newest first.")

(defun lich-test--record-message (text)
  (when (stringp text) (push text lich-test-messages))
  text)

(defvar lich-test-last-result nil "What the last `lich-run-tests' call answered, as a list.")

(defun lich-test--capture-result (orig &optional filter on-done)
  "Around `lich-run-tests' (ORIG): record the result, keep the behaviour (FILTER, ON-DONE)."
  (funcall orig filter (lambda (result)
                         (setq lich-test-last-result (list result))
                         (when on-done (funcall on-done result)))))

(defun lich-test--run-tests (filter)
  "Run `lich-eglot-run-tests' as a user would (FILTER: with C-u, typed in the minibuffer).
Wait for the answer; return (RESULT . MESSAGE), MESSAGE the outcome shown."
  (setq lich-test-messages nil
        lich-test-last-result nil)
  (cl-letf (((symbol-function 'read-string) (lambda (&rest _) filter)))
    (let ((current-prefix-arg (and filter '(4))))
      (call-interactively #'lich-eglot-run-tests)))
  (lich-test-wait "the test run's answer" 90 (lambda () lich-test-last-result))
  (cons (car lich-test-last-result)
        (cl-find-if (lambda (m) (string-match-p "\\`lich: \\(tests \\|running the tests failed\\)" m))
                    lich-test-messages)))

(defun lich-test--lich-diagnostics (buffer)
  "The Flymake diagnostics of BUFFER that came from lich's test run."
  (with-current-buffer buffer
    (cl-remove-if-not (lambda (d) (string-prefix-p "lich tests" (flymake-diagnostic-text d)))
                      (flymake-diagnostics (point-min) (point-max)))))

(defun lich-test-run ()
  (let* ((data (json-read-from-string (getenv "LICH_TEST_DATA")))
         (test-file (alist-get 'test_file data))
         (code-file (alist-get 'code_file data))
         (fail-line (alist-get 'fail_line data))
         test-buffer code-buffer)
    (advice-add 'message :filter-return #'lich-test--record-message)
    (advice-add 'lich-run-tests :around #'lich-test--capture-result)
    (lich-test-start-eglot test-file)
    (setq test-buffer (current-buffer))
    (lich-test-check "Flymake runs in the test buffer" flymake-mode)
    ;; 1. Filtered, green.
    (let* ((answer (lich-test--run-tests (alist-get 'passing_id data)))
           (result (car answer)))
      (lich-test-value 'filtered (list (cons 'message (cdr answer)) (cons 'result result)))
      (lich-test-check "filtered: ok" (eq (plist-get result :ok) t) result)
      (lich-test-check "filtered: one test ran" (and (eql (plist-get result :passed) 1)
                                                     (eql (plist-get result :failed) 0))
                       result)
      (lich-test-check "filtered: 'lich: tests passed: <summary>'"
                       (equal (cdr answer) (format "lich: tests passed: %s" (plist-get result :summary)))
                       answer))
    ;; 2. Everything, red.
    (let* ((answer (lich-test--run-tests nil))
           (result (car answer))
           (failure (and (vectorp (plist-get result :failures)) (aref (plist-get result :failures) 0))))
      (lich-test-value 'red (list (cons 'message (cdr answer)) (cons 'result result)))
      (lich-test-check "red: not ok" (eq (plist-get result :ok) :json-false) result)
      (lich-test-check "red: one failed" (eql (plist-get result :failed) 1) result)
      (lich-test-check "red: the failure's line" (eql (plist-get failure :line) fail-line) failure)
      (lich-test-check "red: the message has the summary and the failing test at its line"
                       (and (cdr answer)
                            (string-prefix-p (format "lich: tests failed: %s" (plist-get result :summary))
                                             (cdr answer))
                            (string-match-p (format "tests/test_calc\\.py:%d .*test_add" (1+ fail-line))
                                            (cdr answer)))
                       answer))
    (lich-test-wait "a lich tests Flymake diagnostic in the test buffer" 30
                    (lambda () (lich-test--lich-diagnostics test-buffer)))
    (let* ((diagnostics (lich-test--lich-diagnostics test-buffer))
           (diagnostic (car diagnostics)))
      (lich-test-value 'diagnostics (mapcar #'flymake-diagnostic-text diagnostics))
      (lich-test-check "one lich tests diagnostic" (= (length diagnostics) 1) diagnostics)
      (lich-test-check "on the failing line"
                       (with-current-buffer test-buffer
                         (= (line-number-at-pos (flymake-diagnostic-beg diagnostic)) (1+ fail-line)))
                       (flymake-diagnostic-beg diagnostic))
      (lich-test-check "an error" (eq (flymake-diagnostic-type diagnostic) 'eglot-error)
                       (flymake-diagnostic-type diagnostic))
      (lich-test-check "the assertion is in its text"
                       (string-match-p "assert" (flymake-diagnostic-text diagnostic))
                       (flymake-diagnostic-text diagnostic)))
    ;; 3. Fix the code, unsaved, and run again from the test buffer.
    (setq code-buffer (find-file-noselect code-file))
    (with-current-buffer code-buffer
      (lich-test-wait "Eglot manages the code buffer" 30
                      (lambda () (let ((s (eglot-current-server)))
                                   (and s (object-of-class-p s 'lich-eglot-server)))))
      (goto-char (point-min))
      (forward-line (alist-get 'code_line data))
      (delete-region (line-beginning-position) (line-end-position))
      (insert (alist-get 'fixed_line data))
      (lich-test-check "the fix is unsaved" (buffer-modified-p))
      ;; Eglot sends didChange from an idle timer (`eglot-send-changes-idle-time'), and batch
      ;; Emacs is never idle: send it now, as that timer would have.
      (eglot--signal-textDocument/didChange))
    (set-buffer test-buffer)
    (let* ((answer (lich-test--run-tests nil))
           (result (car answer)))
      (lich-test-value 'fixed (list (cons 'message (cdr answer)) (cons 'result result)))
      (lich-test-check "fixed: ok" (eq (plist-get result :ok) t) result)
      (lich-test-check "fixed: both passed" (eql (plist-get result :passed) 2) result)
      (lich-test-check "fixed: told as passed" (string-prefix-p "lich: tests passed: " (or (cdr answer) ""))
                       answer))
    (lich-test-check "the server saved the code buffer"
                     (string-match-p (regexp-quote (alist-get 'fixed_line data)) (lich-test-file-text code-file))
                     (lich-test-file-text code-file))
    (lich-test-check "the code buffer is unmodified" (not (buffer-modified-p code-buffer)))
    (lich-test-wait "the lich tests diagnostic cleared" 30
                    (lambda () (null (lich-test--lich-diagnostics test-buffer))))
    (advice-remove 'lich-run-tests #'lich-test--capture-result)
    (eglot-shutdown (eglot-current-server))))

(lich-test-main #'lich-test-run)
