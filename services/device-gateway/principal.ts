/** The Lamp route and the OS API authenticate with the OS authenticator every OS surface shares. */
export { OsAuthenticator as LampAuthenticator } from "../../libs/os-store/os-authenticator.js";
