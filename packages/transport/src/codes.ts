/**
 * Close codes. Applications use small codes (0 = normal, 1 = authentication timeout, ...); the
 * transport reports its own reasons with codes from the top of the u32 range so they never
 * collide.
 */
export const CLOSE_CODE_NORMAL = 0;
export const CLOSE_CODE_PROTOCOL_ERROR = 0xffff_ff01;
export const CLOSE_CODE_IDLE_TIMEOUT = 0xffff_ff02;
export const CLOSE_CODE_PEER_LOST = 0xffff_ff03;
export const CLOSE_CODE_FORCED = 0xffff_ff04;
export const CLOSE_CODE_INTERNAL = 0xffff_ff05;
