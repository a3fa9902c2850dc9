// Goal: the Postgres backend passes the store contract against the real server on this machine
// (never a mock). Method: the shared suite, each case in a fresh schema dropped afterwards.
import { storeContract } from './store-contract.js';

storeContract('postgres');
