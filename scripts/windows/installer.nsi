; Cairn's Windows installer, made by `scripts/package windows` with NSIS (makensis).
;
; A per-user install (no administrator needed, as a user installing a chat app
; expects): the app, the `cairn` CLI and the WebView2 loader go to
; %LOCALAPPDATA%\Programs\Cairn, with a Start menu entry and an entry in "Installed
; apps" that uninstalls. The app draws its window with Microsoft Edge WebView2, which
; Windows 11 and current Windows 10 already have; where it is missing, the installer
; fetches Microsoft's small bootstrapper and runs it (what Tauri's own installers call
; "downloadBootstrapper"), and says so plainly if that cannot be done.
;
; makensis -DVERSION=0.1.0 -DIDENTIFIER=<tauri.conf.json's identifier>
;          -DSOURCE=<folder with the files> -DOUTFILE=<setup.exe>

; A 64-bit installer for a 64-bit app (and one Wine's 64-bit build can run).
Target amd64-unicode
ManifestDPIAware true
SetCompressor /SOLID lzma

!ifndef VERSION | IDENTIFIER | SOURCE | OUTFILE
  !error "give -DVERSION, -DIDENTIFIER, -DSOURCE and -DOUTFILE"
!endif

!include MUI2.nsh
!include LogicLib.nsh

!define APP "Cairn"
!define EXE "cairn-desktop.exe"
!define UNINSTALL_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\${APP}"
; Where the app describes the id its notifications go under (src-tauri/notify/toast.rs);
; the app writes it, the uninstaller takes it away.
!define APP_ID_KEY "Software\Classes\AppUserModelId\${IDENTIFIER}"
; The WebView2 runtime's client id, under which EdgeUpdate records its version.
!define WEBVIEW2_CLIENT "{F3017226-FE2A-4295-8BDF-00C3A9A7E4C5}"
!define WEBVIEW2_BOOTSTRAPPER "https://go.microsoft.com/fwlink/p/?LinkId=2124703"

Name "${APP}"
OutFile "${OUTFILE}"
InstallDir "$LOCALAPPDATA\Programs\${APP}"
InstallDirRegKey HKCU "Software\${APP}" "InstallDir"
RequestExecutionLevel user
VIProductVersion "${VERSION}.0"
VIAddVersionKey "ProductName" "${APP}"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "FileDescription" "${APP} installer"
VIAddVersionKey "LegalCopyright" ""

!define MUI_ICON "${SOURCE}\icon.ico"
!define MUI_UNICON "${SOURCE}\icon.ico"
!define MUI_FINISHPAGE_RUN "$INSTDIR\${EXE}"
!define MUI_FINISHPAGE_RUN_TEXT "Start ${APP}"
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

Section "${APP}"
  SetOutPath "$INSTDIR"
  File "${SOURCE}\${EXE}"
  File "${SOURCE}\cairn.exe"
  File "${SOURCE}\WebView2Loader.dll"
  File "${SOURCE}\icon.ico"
  WriteUninstaller "$INSTDIR\uninstall.exe"
  CreateShortcut "$SMPROGRAMS\${APP}.lnk" "$INSTDIR\${EXE}" "" "$INSTDIR\icon.ico"

  WriteRegStr HKCU "Software\${APP}" "InstallDir" "$INSTDIR"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayName" "${APP}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayIcon" "$INSTDIR\icon.ico"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKCU "${UNINSTALL_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKCU "${UNINSTALL_KEY}" "NoModify" 1
  WriteRegDWORD HKCU "${UNINSTALL_KEY}" "NoRepair" 1

  Call EnsureWebView2
SectionEnd

; $0: the WebView2 runtime's version, or "" when it is not installed (machine-wide,
; as Windows ships it, or for this user only).
Function WebView2Version
  ReadRegStr $0 HKLM "SOFTWARE\WOW6432Node\Microsoft\EdgeUpdate\Clients\${WEBVIEW2_CLIENT}" "pv"
  ${If} $0 == ""
  ${OrIf} $0 == "0.0.0.0"
    ReadRegStr $0 HKCU "Software\Microsoft\EdgeUpdate\Clients\${WEBVIEW2_CLIENT}" "pv"
  ${EndIf}
  ${If} $0 == "0.0.0.0"
    StrCpy $0 ""
  ${EndIf}
FunctionEnd

Function EnsureWebView2
  Call WebView2Version
  ${If} $0 != ""
    DetailPrint "Microsoft Edge WebView2 $0 is installed."
    Return
  ${EndIf}
  DetailPrint "Cairn needs Microsoft Edge WebView2: fetching its installer..."
  StrCpy $1 "$TEMP\MicrosoftEdgeWebview2Setup.exe"
  ; PowerShell speaks HTTPS on every Windows that WebView2 supports.
  nsExec::ExecToLog `powershell.exe -NoProfile -NonInteractive -Command "Invoke-WebRequest -UseBasicParsing -Uri '${WEBVIEW2_BOOTSTRAPPER}' -OutFile '$1'"`
  Pop $2
  ${If} $2 != 0
  ${OrIfNot} ${FileExists} "$1"
    DetailPrint "WebView2's installer could not be fetched ($2)."
    MessageBox MB_OK|MB_ICONEXCLAMATION "Cairn is installed, but it needs Microsoft Edge WebView2, which could not be downloaded now.$\r$\n$\r$\nInstall the WebView2 Runtime from Microsoft, then start Cairn." /SD IDOK
    Return
  ${EndIf}
  ExecWait '"$1" /silent /install' $2
  Delete "$1"
  DetailPrint "WebView2's installer ended with $2."
FunctionEnd

Section "Uninstall"
  Delete "$INSTDIR\${EXE}"
  Delete "$INSTDIR\cairn.exe"
  Delete "$INSTDIR\WebView2Loader.dll"
  Delete "$INSTDIR\icon.ico"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
  Delete "$SMPROGRAMS\${APP}.lnk"
  DeleteRegKey HKCU "${UNINSTALL_KEY}"
  DeleteRegKey HKCU "Software\${APP}"
  DeleteRegKey HKCU "${APP_ID_KEY}"
SectionEnd
