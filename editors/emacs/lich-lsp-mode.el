;;; lich-lsp-mode.el --- lich-lsp (a coding agent in the language server) for lsp-mode  -*- lexical-binding: t; -*-

;; Version: 0.2
;; Package-Requires: ((emacs "27.1") (lsp-mode "8.0"))
;; Keywords: tools, languages

;;; Commentary:

;; The lsp-mode adapter of `lich.el' (which has the transcript, the save handler and the
;; commands).  Registers lich-lsp as an lsp-mode add-on client (`:add-on? t'), so it runs next
;; to the buffer's usual language server, with handlers for
;;  - `lich/saveDocuments' (declared as `experimental.lich.saveDocuments'):
;;    `lich-save-documents' saves exactly the named buffers, no prompts;
;;  - `lich/event' notifications: `lich-handle-event' renders them in *lich transcript*;
;;  - the "Ask agent…" code action (`lich.ask' without a prompt asks for one).
;; Only lsp-mode's public API: `lsp-register-client' with `make-lsp-client'
;; (`:request-handlers', `:notification-handlers', `:action-handlers', `:initialized-fn', the
;; last telling lich.el when the server (re)started), `lsp-find-workspace', `with-lsp-workspace',
;; `lsp-request', `lsp-request-async', `lsp-text-document-identifier', `lsp-point-to-position'.
;;
;; Commands are sent to the lich workspace only (never broadcast): `lich-lsp-mode-ask',
;; `lich-lsp-mode-cancel', `lich-lsp-mode-apply-patch', `lich-lsp-mode-status',
;; `lich-lsp-mode-trust-workspace', `lich-lsp-mode-run-tests', `lich-lsp-mode-transcript' are
;; aliases of `lich-ask' and the others in lich.el.
;;
;; Setup (all three files of editors/emacs on the load path):
;;   (add-to-list 'load-path "/path/to/lich-lsp/editors/emacs")
;;   (with-eval-after-load 'lsp-mode (require 'lich-lsp-mode))
;;   ;; then M-x lsp in a project buffer (lich attaches to every file mode by default)

;;; Code:

(require 'cl-lib)
(require 'lsp-mode)
(require 'subr-x)
(require 'lich)

(defgroup lich-lsp-mode nil
  "lich-lsp through lsp-mode."
  :group 'lich
  :group 'lsp-mode
  :prefix "lich-lsp-mode-")

(defcustom lich-lsp-mode-command '("lich-lsp")
  "Command line that starts lich-lsp (stdio)."
  :type '(repeat string))

(defcustom lich-lsp-mode-major-modes nil
  "Major modes lich attaches to; nil means every file buffer in a project."
  :type '(repeat symbol))

(defcustom lich-lsp-mode-initialization-options nil
  "Plist sent as LSP initializationOptions, or nil.
Same keys as .lich/config.json."
  :type 'sexp)

(lich-define-legacy-variable 'lich-lsp-mode-transcript-buffer 'lich-transcript-buffer)
(lich-define-legacy-variable 'lich-lsp-mode-ask-history 'lich-ask-history)

;;;; The adapter

(defun lich-lsp-mode--connection (anywhere)
  "The lich workspace of this buffer's file.
With ANYWHERE non-nil, else any lich workspace."
  (or (and buffer-file-name (lsp-find-workspace 'lich buffer-file-name))
      (and anywhere (lsp-find-workspace 'lich nil))))

(defun lich-lsp-mode--request (workspace method params)
  (with-lsp-workspace workspace
    (lsp-request method params)))

(defun lich-lsp-mode--async-request (workspace method params on-success on-error)
  (with-lsp-workspace workspace
    (lsp-request-async method params on-success
                       :mode 'detached
                       :error-handler on-error)))

(defun lich-lsp-mode--document-uri ()
  (lich-json-get (lsp-text-document-identifier) "uri"))

(lich-register-adapter
 (lich-adapter-create :name 'lsp-mode
                      :connection #'lich-lsp-mode--connection
                      :request #'lich-lsp-mode--request
                      :async-request #'lich-lsp-mode--async-request
                      :document-uri #'lich-lsp-mode--document-uri
                      :position #'lsp-point-to-position
                      :start-hint "M-x lsp"))

;;;; Commands (the shared ones of lich.el)

(defalias 'lich-lsp-mode-execute #'lich-execute)
(defalias 'lich-lsp-mode-execute-async #'lich-execute-async)
(defalias 'lich-lsp-mode-ask #'lich-ask)
(defalias 'lich-lsp-mode-cancel #'lich-cancel)
(defalias 'lich-lsp-mode-apply-patch #'lich-apply-patch)
(defalias 'lich-lsp-mode-status #'lich-status)
(defalias 'lich-lsp-mode-trust-workspace #'lich-trust-workspace)
(defalias 'lich-lsp-mode-run-tests #'lich-run-tests)
(defalias 'lich-lsp-mode-transcript #'lich-transcript)

;;;; Registration

(defun lich-lsp-mode--handlers (&rest pairs)
  "A handler table for `make-lsp-client' from PAIRS of method and function."
  (let ((table (make-hash-table :test 'equal)))
    (cl-loop for (method function) on pairs by #'cddr
             do (puthash method function table))
    table))

(lsp-register-client
 (make-lsp-client
  :new-connection (lsp-stdio-connection (lambda () lich-lsp-mode-command))
  :activation-fn (lambda (_file-name mode)
                   (or (null lich-lsp-mode-major-modes) (memq mode lich-lsp-mode-major-modes)))
  :add-on? t
  :priority -2
  :server-id 'lich
  :custom-capabilities '((experimental . ((lich . ((saveDocuments . t))))))
  :initialization-options (lambda () lich-lsp-mode-initialization-options)
  ;; On every start and restart of this client only (chats reload their thread).
  :initialized-fn #'lich-handle-connect
  :request-handlers (lich-lsp-mode--handlers
                     "lich/saveDocuments"
                     (lambda (_workspace params) (lich-save-documents (lich-json-get params "uris"))))
  :notification-handlers (lich-lsp-mode--handlers
                          "lich/event" (lambda (_workspace event) (lich-handle-event event)))
  :action-handlers (lich-lsp-mode--handlers
                    "lich.ask"
                    (lambda (action) (lich-run-ask-command (lich-json-get action "arguments"))))))

(provide 'lich-lsp-mode)
;;; lich-lsp-mode.el ends here
