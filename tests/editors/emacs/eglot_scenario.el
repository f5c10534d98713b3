;;; eglot_scenario.el --- batch test of editors/emacs/lich-eglot.el  -*- lexical-binding: t; -*-
;; Run by tests/editors/test_emacs.py:
;;   emacs -Q --batch -L editors/emacs -l tests/editors/emacs/eglot_scenario.el
;; Environment: LICH_TEST_WORKSPACE, LICH_TEST_PYTHON, LICH_TEST_RESULT, LICH_TEST_PATCH.
;; Writes {"error": ..., "checks": [...], "values": {...}} to LICH_TEST_RESULT, then exits.

(require 'cl-lib)
(require 'json)
(require 'eglot)
(require 'lich-eglot)

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

(defun lich-test-run ()
  (let* ((ws (file-name-as-directory (getenv "LICH_TEST_WORKSPACE")))
         (file (expand-file-name "hello.py" ws))
         (uri (eglot--path-to-uri file)))
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
                                 (and s (object-of-class-p s 'lich-eglot-server)))))
    (let ((server (eglot-current-server)))
      (lich-test-check "server initialized"
                       (plist-get (eglot--capabilities server) :executeCommandProvider)
                       (eglot--capabilities server)))
    ;; lich.read through our command path: anchored rows of the open buffer.
    (let* ((result (lich-eglot-execute "lich.read" (list :uri uri)))
           (rows (plist-get result :rows)))
      (lich-test-value 'rows rows)
      (lich-test-check "lich.read returns rows"
                       (and (stringp rows) (string-match-p "^1:[0-9a-f][0-9a-f]|def hello():" rows)
                            (string-match-p "^2:[0-9a-f][0-9a-f]|    return 1" rows))
                       result))
    (let ((status (lich-eglot-status)))
      (lich-test-check "server saw experimental.lich.saveDocuments"
                       (eq (plist-get (plist-get status :client) :save_documents) t)
                       status))
    ;; lich.applyPatch: the edit arrives as workspace/applyEdit, then lich/saveDocuments saves.
    (let ((result (with-temp-buffer
                    (insert (getenv "LICH_TEST_PATCH"))
                    (lich-eglot-apply-patch (point-min) (point-max)))))
      (lich-test-value 'patch_result result)
      (unless (lich-test-check "patch applied" (eq (plist-get result :ok) t) result)
        (error "lich.applyPatch failed: %S" result)))
    (lich-test-wait "buffer edited" 30
                    (lambda () (with-current-buffer (find-buffer-visiting file)
                                 (string-match-p "return 2" (buffer-string)))))
    (lich-test-wait "saved to disk" 30
                    (lambda () (string-match-p "return 2" (lich-test-file-text file))))
    (lich-test-check "buffer saved, not modified"
                     (not (buffer-modified-p (find-buffer-visiting file))))
    ;; Code actions: the "Ask agent…" action is offered for a range.
    (let* ((actions (eglot-code-actions (point-min) (point-max)))
           (titles (mapcar (lambda (a) (plist-get a :title)) actions)))
      (lich-test-value 'code_actions (vconcat titles))
      (lich-test-check "Ask agent… offered" (member "Ask agent…" titles) titles))
    (eglot-shutdown (eglot-current-server))))

(condition-case err
    (progn (lich-test-run) (lich-test-write nil))
  (error (lich-test-write (error-message-string err))))
(kill-emacs 0)
