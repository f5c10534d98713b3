;;; eglot_scenario.el --- batch test of editors/emacs/lich-eglot.el (+ lich.el)  -*- lexical-binding: t; -*-
;; Run by tests/editors/test_emacs.py:
;;   emacs -Q --batch -L editors/emacs -l tests/editors/emacs/eglot_scenario.el
;; Environment: LICH_TEST_WORKSPACE, LICH_TEST_PYTHON, LICH_TEST_RESULT, LICH_TEST_PATCH.
;; Writes {"error": ..., "checks": [...], "values": {...}} to LICH_TEST_RESULT, then exits.

(require 'cl-lib)
(require 'json)
(require 'eglot)
(require 'lich-eglot)

(load (expand-file-name "lich_test_support" (file-name-directory load-file-name)) nil t)

(defun lich-test-run ()
  (let* ((ws (file-name-as-directory (getenv "LICH_TEST_WORKSPACE")))
         (file (expand-file-name "hello.py" ws))
         (uri (eglot--path-to-uri file)))
    (lich-test-start-eglot file)
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
    ;; lich.cancel with no task running: answered, nothing cancelled.
    (let ((result (lich-eglot-cancel)))
      (lich-test-value 'cancel_result result)
      (lich-test-check "lich-eglot-cancel answered" (plist-member result :cancelled) result))
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

(lich-test-main #'lich-test-run)
