/* Wine 8 (Debian 12's) lacks bcryptprimitives.dll, whose ProcessPrng Rust's standard library
 * calls for random numbers on Windows (every Windows 10 and 11 has it): this stand-in, put in
 * the Wine prefix by .ci/check.d/other-systems, answers it with RtlGenRandom. */
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
