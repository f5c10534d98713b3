;;; lich-eglot.el --- lich-lsp (a coding agent in the language server) for Eglot  -*- lexical-binding: t; -*-

;; Version: 0.2
;; Package-Requires: ((emacs "27.1") (eglot "1.9"))
;; Keywords: tools, languages

;;; Commentary:

;; The Eglot adapter of `lich.el' (which has the transcript, the save handler and the
;; commands): Eglot talks to lich-lsp through the server class `lich-eglot-server', which
;;  - declares `experimental.lich.saveDocuments' and answers `lich/saveDocuments'
;;    (`lich-save-documents');
;;  - sends `lich/event' notifications to the *lich transcript* buffer (`lich-handle-event');
;;  - shows `$/progress' in the echo area;
;;  - asks for the prompt when the "Ask agent…" code action runs `lich.ask' without one.
;; Only Eglot's and jsonrpc's public API: its generic functions (`eglot-handle-request',
;; `eglot-handle-notification', `eglot-execute-command', `eglot-client-capabilities',
;; `eglot-initialization-options'), `eglot-current-server', `eglot-connect-hook',
;; `eglot-managed-mode-hook', `eglot-completion-at-point', `jsonrpc-request'.
;;
;; Completions: Eglot's own `completion-at-point' asks lich, which answers with the suggestion
;; of its completion model (when the lich config names one); `lich-eglot-completions' nil
;; turns that off.
;;
;; The commands `lich-eglot-ask', `lich-eglot-cancel', `lich-eglot-apply-patch',
;; `lich-eglot-status', `lich-eglot-trust-workspace', `lich-eglot-run-tests',
;; `lich-eglot-transcript' are aliases of `lich-ask' and the others in lich.el.
;;
;; Setup (see README.md next to this file; all three files must be on the load path):
;;   (add-to-list 'load-path "/path/to/lich-lsp/editors/emacs")
;;   (require 'lich-eglot)
;;   (lich-eglot-register '(python-mode js-mode))   ; modes whose files lich manages
;;
;; Eglot manages a buffer with one server at a time; `M-x lich-eglot-start' starts lich for the
;; current buffer whatever its mode.

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)
(require 'subr-x)
(require 'lich)

(defgroup lich-eglot nil
  "lich-lsp through Eglot."
  :group 'lich
  :group 'eglot
  :prefix "lich-eglot-")

(defcustom lich-eglot-command '("lich-lsp")
  "Command line that starts lich-lsp (stdio).
For a project's own Python use e.g.
  (\"/path/to/venv/bin/python\" \"-m\" \"lich_lsp\")."
  :type '(repeat string))

(defcustom lich-eglot-initialization-options nil
  "Plist sent as LSP initializationOptions (the keys of .lich/config.json), or nil."
  :type '(choice (const nil) plist))

(defcustom lich-eglot-completions t
  "Non-nil: `completion-at-point' in a lich buffer offers lich's completion.
The server answers `textDocument/completion' with one item, the
suggestion of the completion model the lich config names (its
`completion' key); with none configured the answer is empty.
nil: Eglot's `completion-at-point' function is taken out of the
buffers lich manages, from the next time Eglot manages them
\(\[eglot-reconnect] applies a change)."
  :type 'boolean)

(lich-define-legacy-variable 'lich-eglot-transcript-buffer 'lich-transcript-buffer)
(lich-define-legacy-variable 'lich-eglot-ask-history 'lich-ask-history)

(defclass lich-eglot-server (eglot-lsp-server) ()
  :documentation "Eglot server class for lich-lsp.")

(defvar lich-eglot--servers nil
  "The `lich-eglot-server's made so far (dead ones dropped on lookup).")

(cl-defmethod initialize-instance :after ((server lich-eglot-server) &rest _)
  (push server lich-eglot--servers))

;;;; Capabilities and initialization

(cl-defmethod eglot-client-capabilities ((server lich-eglot-server))
  (let ((caps (copy-sequence (cl-call-next-method server))))
    (setq caps (plist-put caps :experimental '(:lich (:saveDocuments t))))
    ;; Eglot 1.9 answers window/showMessageRequest (approvals, quick prompts) but does not say
    ;; so; without it the server would fall back to denying tools that need approval.
    (plist-put caps :window '(:workDoneProgress t
                              :showMessage (:messageActionItem (:additionalPropertiesSupport :json-false))))))

(cl-defmethod eglot-initialization-options ((server lich-eglot-server))
  (or lich-eglot-initialization-options (cl-call-next-method server)))

;;;; Server requests and notifications

(defun lich-eglot--uri-to-path (uri)
  "URI's file name: Eglot's own conversion when it is public (Eglot 1.16+)."
  (if (fboundp 'eglot-uri-to-path) (eglot-uri-to-path uri) (lich-uri-to-path uri)))

(cl-defmethod eglot-handle-request
  ((_server lich-eglot-server) (_method (eql lich/saveDocuments)) &key uris &allow-other-keys)
  "Save exactly the buffers of URIS, so disk matches the agent's edits."
  (lich-save-documents uris #'lich-eglot--uri-to-path))

(cl-defmethod eglot-handle-request
  ((_server lich-eglot-server) (_method (eql window/workDoneProgress/create)) &rest _)
  "Accept the progress token; `$/progress' notifications follow."
  nil)

(cl-defmethod eglot-handle-notification
  ((_server lich-eglot-server) (_method (eql $/progress)) &key _token value &allow-other-keys)
  (lich-show-progress value))

(cl-defmethod eglot-handle-notification
  ((_server lich-eglot-server) (_method (eql lich/event)) &rest event)
  (lich-handle-event event))

;; The "Ask agent…" code action carries lich.ask without a prompt: ask for one here, and run
;; the task asynchronously (Eglot's default executeCommand would block Emacs until it ends).
(cl-defmethod eglot-execute-command ((_server lich-eglot-server) (_command (eql lich.ask)) arguments)
  (lich-run-ask-command arguments))

;;;; Connecting

(defun lich-eglot--on-connect (server)
  "`eglot-connect-hook' member: tell lich.el that SERVER, if lich, is up.
So chats reload their thread after a restart."
  (when (object-of-class-p server 'lich-eglot-server)
    (lich-handle-connect server)))

(add-hook 'eglot-connect-hook #'lich-eglot--on-connect)

(defun lich-eglot--on-managed ()
  "`eglot-managed-mode-hook' member: honour `lich-eglot-completions'."
  (when (and (not lich-eglot-completions)
             (eglot-managed-p)
             (object-of-class-p (eglot-current-server) 'lich-eglot-server))
    (remove-hook 'completion-at-point-functions #'eglot-completion-at-point t)))

(add-hook 'eglot-managed-mode-hook #'lich-eglot--on-managed)

;;;; The adapter

(defun lich-eglot--connection (anywhere)
  "The lich server managing this buffer.
With ANYWHERE non-nil, else any running lich server."
  (let ((current (eglot-current-server)))
    (if (and current (object-of-class-p current 'lich-eglot-server))
        current
      (setq lich-eglot--servers (cl-remove-if-not #'jsonrpc-running-p lich-eglot--servers))
      (and anywhere (car lich-eglot--servers)))))

(defun lich-eglot--request (server method params)
  (jsonrpc-request server (intern (concat ":" method)) params))

(defun lich-eglot--async-request (server method params on-success on-error)
  (let ((method (intern (concat ":" method))))
    (apply #'jsonrpc-async-request server method params
           :success-fn on-success
           :error-fn on-error
           :timeout-fn #'ignore
           ;; Agent tasks run for minutes: no client-side timeout.
           :timeout most-positive-fixnum
           ;; A request about a document (ghost text) waits until Eglot has sent the server
           ;; the buffer's latest edits (it sends them when Emacs is idle); a newer request of
           ;; the same method replaces a waiting one.
           (and (string-prefix-p ":textDocument/" (symbol-name method))
                (list :deferred method)))))

(defun lich-eglot--document-uri ()
  (if (fboundp 'eglot-path-to-uri)
      (eglot-path-to-uri buffer-file-name)
    (lich-path-to-uri buffer-file-name)))

(defun lich-eglot--position (pos)
  "The LSP position of POS, columns as Eglot counts them."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char pos)
      (list :line (1- (line-number-at-pos pos t))
            ;; `eglot-current-column-function' became `eglot-current-linepos-function' (1.12).
            :character (funcall (symbol-value (if (boundp 'eglot-current-linepos-function)
                                                  'eglot-current-linepos-function
                                                'eglot-current-column-function)))))))

(lich-register-adapter
 (lich-adapter-create :name 'eglot
                      :connection #'lich-eglot--connection
                      :request #'lich-eglot--request
                      :async-request #'lich-eglot--async-request
                      :document-uri #'lich-eglot--document-uri
                      :position #'lich-eglot--position
                      :start-hint "M-x lich-eglot-start"))

;;;; Commands (the shared ones of lich.el)

(defalias 'lich-eglot-execute #'lich-execute)
(defalias 'lich-eglot-execute-async #'lich-execute-async)
(defalias 'lich-eglot-ask #'lich-ask)
(defalias 'lich-eglot-cancel #'lich-cancel)
(defalias 'lich-eglot-apply-patch #'lich-apply-patch)
(defalias 'lich-eglot-status #'lich-status)
(defalias 'lich-eglot-trust-workspace #'lich-trust-workspace)
(defalias 'lich-eglot-run-tests #'lich-run-tests)
(defalias 'lich-eglot-transcript #'lich-transcript)

;;;; Starting

(defun lich-eglot-register (modes)
  "Let Eglot start lich-lsp for buffers in MODES (a list of major modes)."
  (add-to-list 'eglot-server-programs (cons modes (cons 'lich-eglot-server lich-eglot-command))))

(defun lich-eglot-start ()
  "Start lich-lsp for the current buffer's project, whatever its major mode."
  (interactive)
  (let ((mode major-mode))
    (eglot (list mode) (or (project-current) (cons 'transient default-directory))
           'lich-eglot-server lich-eglot-command
           (string-remove-suffix "-mode" (symbol-name mode)) t)))

(provide 'lich-eglot)
;;; lich-eglot.el ends here
