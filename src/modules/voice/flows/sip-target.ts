// A call flow's `sip` dial target (CONTRACT section 13), by the rule docs/voice.md states: a SIP URI dials a
// phone registered on this platform, `sip:<extension>@<SIP_DOMAIN>`, one of the organization's extensions.
// URIs of other hosts are refused when the flow is saved: dialling any host from our SIP stack would let a
// flow make our server send INVITEs (and RTP) wherever a customer says, the SSRF of SIP, and toll fraud's
// favourite door; phone numbers go out through the trunk instead.

/** The extension number a `sip:`/`sips:` URI names in `domain` (compared without case), or undefined. */
export function sipExtension(uri: string, domain?: string): string | undefined {
  const match = /^sips?:([0-9]{2,6})@([^;?:]+)(?::[0-9]{1,5})?(?:[;?].*)?$/i.exec(uri.trim());
  if (!match) return undefined;
  if (domain !== undefined && match[2]!.toLowerCase() !== domain.toLowerCase()) return undefined;
  return match[1];
}
