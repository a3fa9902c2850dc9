/// <reference types="node" resolution-mode="require"/>
declare class QUICConnectionId extends Uint8Array {
    readonly string: string;
    /**
     * Decodes from hex string.
     */
    static fromString(idString: string): QUICConnectionId;
    /**
     * Decodes as Buffer zero-copy.
     */
    static fromBuffer(idBuffer: Buffer): QUICConnectionId;
    constructor();
    constructor(length: number);
    constructor(array: ArrayLike<number> | ArrayBufferLike);
    constructor(buffer: ArrayBufferLike, byteOffset?: number, length?: number);
    /**
     * Encodes to hex string.
     */
    toString(): string;
    /**
     * Encodes as Buffer zero-copy.
     */
    toBuffer(): Buffer;
    [Symbol.toPrimitive](_hint: 'string' | 'number' | 'default'): string;
}
export default QUICConnectionId;
