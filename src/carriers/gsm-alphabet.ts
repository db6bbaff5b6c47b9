// The GSM 03.38 default alphabet (3GPP TS 23.038), shared by segment counting (messaging) and the SMPP
// carrier's encoder: one table, so the carrier sends exactly the septets we count.

// 3GPP TS 23.038 default alphabet in code order 0x00–0x7F, without 0x1B (the escape to the extension table,
// which no Unicode character maps to). Ç is 0x09; lowercase ç is not in the set.
export const GSM_BASIC_CHARACTERS =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?' +
  '¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';

// The extension table's characters, each sent as ESC + one septet: form feed ^ { } \ [ ~ ] | €.
export const GSM_EXTENSION_CHARACTERS = '\f^{}\\[~]|€';
