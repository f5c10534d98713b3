;;; transcript_fixtures.el --- the shared lich/event fixtures in the Emacs transcript (batch ERT, no server)  -*- lexical-binding: t; -*-

;; Run by tests/editors/test_emacs.py (which first validates the fixtures against
;; docs/lich-event.schema.json, and then compares what this file writes with the lines a user
;; must see):
;;   LICH_TEST_FIXTURES_DIR=tests/fixtures/events LICH_TEST_RESULT_DIR=/tmp/x \
;;   emacs --batch -L editors/emacs -l tests/editors/emacs/transcript_fixtures.el \
;;         -f ert-run-tests-batch-and-exit
;;
;; Every fixture (a JSON array of `lich/event' params) is framed as the server writes it
;; (Content-Length header, a JSON-RPC notification, UTF-8) and handed to each client's own
;; reader, so the payload reaches lich.el in exactly that client's JSON representation:
;;  - eglot: jsonrpc's process filter on a `lich-eglot-server' (plists, false as :json-false,
;;    dispatched the way Eglot's connection does: params spread as keyword arguments to
;;    `eglot-handle-notification');
;;  - lsp-mode: lsp-mode's process filter for a workspace of the `lich' client that
;;    lich-lsp-mode.el registers (hash tables, false as nil), through its own notification
;;    dispatch to the registered "lich/event" handler;
;;  - lsp-mode-plists: lsp-mode's JSON reader with `lsp-use-plists' (plists, false as nil) and
;;    the registered handler (an lsp-mode built for plists dispatches the same way).
;; Each test writes LICH_TEST_RESULT_DIR/<client>.json:
;;   {"client": ..., "transcripts": {fixture: text}, "events": {fixture: rendered count},
;;    "errors": [...]}.
;; Nothing here waits: both clients' filters dispatch a complete message synchronously.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'json)
(require 'lich-eglot)

(defvar lsp-use-plists)
(defvar lsp-clients)

(defun lich-fixture-files ()
  "The fixture files of $LICH_TEST_FIXTURES_DIR, sorted."
  (let ((dir (getenv "LICH_TEST_FIXTURES_DIR")))
    (unless (and dir (file-directory-p dir))
      (error "LICH_TEST_FIXTURES_DIR is not a directory: %S" dir))
    (directory-files dir t "\\.json\\'")))

(defun lich-fixture-wire (file)
  "The notifications of fixture FILE as the server writes them: a list of byte strings."
  (let ((events (with-temp-buffer
                  (let ((coding-system-for-read 'utf-8))
                    (insert-file-contents file))
                  ;; :null/:false so that re-serializing keeps null and false as they are.
                  (json-parse-buffer :object-type 'hash-table :array-type 'array
                                     :null-object :null :false-object :false))))
    (mapcar (lambda (event)
              (let ((message (make-hash-table :test #'equal)))
                (puthash "jsonrpc" "2.0" message)
                (puthash "method" "lich/event" message)
                (puthash "params" event message)
                (let* ((text (json-serialize message :null-object :null :false-object :false))
                       (body (encode-coding-string text 'utf-8 t)))
                  (encode-coding-string
                   (format "Content-Length: %d\r\n\r\n%s" (string-bytes body) text) 'utf-8 t))))
            events)))

(defvar lich-fixture-rendered 0 "Events that reached `lich-render-event' for this fixture.")
(defvar lich-fixture-errors nil "Errors `lich-render-event' signalled (which its handler hides).")

(defun lich-fixture--watch (render event)
  "Around `lich-render-event': count EVENT and record an error RENDER signals."
  (cl-incf lich-fixture-rendered)
  (condition-case err
      (funcall render event)
    (error (push (format "%s: %S" (lich-json-get event "type") err) lich-fixture-errors)
           (signal (car err) (cdr err)))))

(defun lich-fixture-render-all (client deliver)
  "Render every fixture through DELIVER, a function of one fixture's wire messages.
Write LICH_TEST_RESULT_DIR/CLIENT.json and return the transcripts as an alist."
  (let ((transcripts (make-hash-table :test #'equal))
        (counts (make-hash-table :test #'equal))
        (errors nil))
    (advice-add 'lich-render-event :around #'lich-fixture--watch)
    (unwind-protect
        (dolist (file (lich-fixture-files))
          (let* ((name (file-name-base file))
                 (lich-transcript-buffer (format " *lich-fixture-%s-%s*" client name))
                 (lich--streaming nil)
                 (lich--streamed-tasks (make-hash-table :test #'equal))
                 (lich-fixture-rendered 0)
                 (lich-fixture-errors nil))
            (unwind-protect
                (progn
                  (funcall deliver (lich-fixture-wire file))
                  (puthash name (if (get-buffer lich-transcript-buffer)
                                    (with-current-buffer lich-transcript-buffer
                                      (should buffer-read-only)
                                      (buffer-substring-no-properties (point-min) (point-max)))
                                  "")
                           transcripts)
                  (puthash name lich-fixture-rendered counts)
                  (setq errors (append errors (mapcar (lambda (e) (format "%s: %s" name e))
                                                      (reverse lich-fixture-errors)))))
              (when (get-buffer lich-transcript-buffer) (kill-buffer lich-transcript-buffer)))))
      (advice-remove 'lich-render-event #'lich-fixture--watch))
    (let ((result (make-hash-table :test #'equal))
          (dir (or (getenv "LICH_TEST_RESULT_DIR") (error "LICH_TEST_RESULT_DIR is not set"))))
      (puthash "client" client result)
      (puthash "transcripts" transcripts result)
      (puthash "events" counts result)
      (puthash "errors" (vconcat errors) result)
      (with-temp-file (expand-file-name (concat client ".json") dir)
        (setq buffer-file-coding-system 'utf-8-unix)
        (insert (json-serialize result))))
    (should (equal errors nil))
    (should (> (hash-table-count transcripts) 0))))

;;;; Eglot

(ert-deftest lich-fixtures-through-eglot ()
  (let* ((process (make-pipe-process :name "lich-fixtures-eglot" :noquery t))
         (server (make-instance
                  'lich-eglot-server :name "lich-fixtures" :process process
                  ;; What Eglot's connection does with a notification's params.
                  :notification-dispatcher
                  (lambda (server method params)
                    (apply #'eglot-handle-notification server method (append params nil)))
                  :request-dispatcher #'ignore)))
    (unwind-protect
        (lich-fixture-render-all
         "eglot"
         (lambda (messages)
           (dolist (wire messages)
             ;; Eglot's process decodes its output as utf-8-emacs-unix before the filter.
             (funcall (process-filter process) process
                      (decode-coding-string wire 'utf-8-emacs-unix)))))
      (ignore server)
      (delete-process process))))

;;;; lsp-mode

(defun lich-fixture-lsp-client ()
  "The `lich' client lich-lsp-mode.el registers; skips without lsp-mode."
  (unless (require 'lsp-mode nil t)
    (ert-skip "lsp-mode is not installed"))
  (require 'lich-lsp-mode)
  (or (gethash 'lich lsp-clients) (error "lich-lsp-mode.el registered no `lich' client")))

(ert-deftest lich-fixtures-through-lsp-mode ()
  (let* ((client (lich-fixture-lsp-client))
         (workspace (funcall 'make-lsp--workspace :client client :root default-directory))
         (filter (funcall 'lsp--create-filter-function workspace)))
    (lich-fixture-render-all
     "lsp-mode"
     (lambda (messages)
       ;; lsp-mode's process is binary (no conversion): its filter decodes the body itself.
       (dolist (wire messages)
         (funcall filter nil wire))))))

(ert-deftest lich-fixtures-through-lsp-mode-plists ()
  (let* ((client (lich-fixture-lsp-client))
         (handler (gethash "lich/event" (funcall 'lsp--client-notification-handlers client))))
    (should (functionp handler))
    (lich-fixture-render-all
     "lsp-mode-plists"
     (lambda (messages)
       (dolist (wire messages)
         (let* ((body (decode-coding-string
                       (substring wire (+ 4 (string-match "\r\n\r\n" wire))) 'utf-8))
                (message (let ((lsp-use-plists t))
                           (eval `(lsp--read-json ,body) t))))
           (should (equal (plist-get message :method) "lich/event"))
           (funcall handler nil (plist-get message :params))))))))

;;; transcript_fixtures.el ends here
