/*
 * ProcessPrng, the one export of bcryptprimitives.dll that Rust's standard
 * library (1.78 and later) imports on Windows for its random numbers
 * (HashMap's keys). Wine before 9.0 has no bcryptprimitives.dll, so every
 * Rust program fails to start under it (c0000135, "Library
 * bcryptprimitives.dll ... not found"). This stand-in, built with mingw-w64
 * and put in the test Wine prefix's system32 by `cargo xtask cross-wine`,
 * fills the buffer from bcrypt's system RNG, which Wine has.
 */
#include <windows.h>
#include <bcrypt.h>

/* BCryptGenRandom takes a ULONG length: ask for at most 1 GiB at a time. */
#define MAX_CHUNK ((SIZE_T)1 << 30)

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = (ULONG)(len < MAX_CHUNK ? len : MAX_CHUNK);
        NTSTATUS status = BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG);
        if (!BCRYPT_SUCCESS(status)) {
            return FALSE;
        }
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
