// ProcessPrng for Wine 8.0, which lacks bcryptprimitives.dll: Rust programs built for
// Windows ask it for random bytes at start. It answers from BCryptGenRandom.
#include <windows.h>
#include <bcrypt.h>
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    return BCryptGenRandom(NULL, data, (ULONG)len, BCRYPT_USE_SYSTEM_PREFERRED_RNG) == 0;
}
