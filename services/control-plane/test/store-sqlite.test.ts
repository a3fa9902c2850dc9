// Goal: the SQLite backend passes the store contract. Method: the shared suite on a temp file.
import { storeContract } from './store-contract.js';

storeContract('sqlite');
